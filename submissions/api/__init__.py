"""The HTTP API's domain routers (agents, contestants, benchmark uploads, datasets), their input types,
authentication and shared error answers; config/api.py mounts them under /api/v1/."""
