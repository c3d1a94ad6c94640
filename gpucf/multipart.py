"""A multipart/form-data body (RFC 7578) from text fields and files, for the upload of a bundle."""
import uuid


def _quoted(value):
    """A parameter value in a Content-Disposition header: quotes and line breaks escaped, as browsers do."""
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def encode(fields, files):
    """(body, content type) for `fields` ((name, text) pairs) and `files` ((field, filename, bytes, type))."""
    boundary = f"gpucf-{uuid.uuid4().hex}"
    parts = []
    for name, value in fields:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n'.encode()
                     + value.encode("utf-8") + b"\r\n")
    for name, filename, data, content_type in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"; '
                     f'filename="{_quoted(filename)}"\r\nContent-Type: {content_type}\r\n\r\n'.encode()
                     + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
