"""Submission bundles: finding their files, unpacking zips safely, importing their modules and
building their models."""
