"""What crosses the wire between the site and the agent: the vocabulary (statuses, flags, stages,
bundle file names, the job, the API paths) and the result's shape. The standard library only."""
