"""Pure logic of the assessment workbench: formats, pooling, judges, scoring.

Nothing in this package needs Streamlit except :mod:`assess.ui`.
"""
