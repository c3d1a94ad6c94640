"""The agent as the site's RQ worker: the job it runs and the guard that refuses every other,
claims, heartbeats, the site client, the fleet of one worker per GPU, the agent's settings."""
