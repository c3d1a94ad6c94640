"""The contest's rules: how standings are ranked, how a run is scored (rubrics), which runs give a
submission's figure, which timing flags hold it back, and how dataset samples are weighted. Pure
functions of their inputs, shared by services, pages and the API."""
