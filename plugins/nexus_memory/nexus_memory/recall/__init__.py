"""Recall: the pipeline of ``recall_memories``, read top to bottom in ``pipeline``.

- ``terms``: the query's exact terms (error codes, identifiers), which a memory must contain literally;
- ``scoring``: a candidate's score (similarity, lifts, penalties) and the weights chosen on the labeled sets;
- ``pipeline``: the candidates, the memories found by tag and by exact term, the penalties, the ranking and the
  lift of each candidate's best sentence, in the order they apply.

The store (``nexus_memory.store``) answers the queries; nothing here writes.
"""
