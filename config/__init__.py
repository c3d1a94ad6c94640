"""The Django project: settings, the root URLs, WSGI, the middleware and the API root. The apps
(leaderboard: the public pages; submissions: everything else) hold no project configuration."""
