"""Business logic of the contest domain. Views and API endpoints call these; models stay passive."""
