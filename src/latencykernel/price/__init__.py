"""The pure laws of the cost model.

Every law is a small function of numbers, with its formula and units in the docstring.
Nothing here imports anything else from latencykernel: the laws stand alone so they can
be read, tested and taught on their own.
"""
