"""Deciding whether outputs agree: the comparison of a candidate's outputs with the reference's, and
the bundle's numpy ground truth."""
