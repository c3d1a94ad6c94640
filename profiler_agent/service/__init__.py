"""The agent as a service of the site: the RQ worker, the job it runs, heartbeats, the site client
and the agent's settings."""
