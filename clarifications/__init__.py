"""Clarifications and announcements of a season: contestants ask the organizers privately, organizers
answer the asker alone or everyone (without the asker's name), and post announcements; each reader's
unread answers and announcements are counted for the header."""
