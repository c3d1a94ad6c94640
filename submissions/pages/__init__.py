"""The HTML pages of the contest (issues, submissions, accounts, pull requests, datasets, the
organizers' console) and their forms. Thin: they read through selectors and act through services."""
