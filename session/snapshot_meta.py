"""The snapshot's schema version and title length, for readers that load no model.

`snapshot.py` holds the model; the session listing reads the few fields it shows from a
snapshot without it (`local/listing.py`), so both take these from here.
"""

SCHEMA_VERSION = 4
TITLE_CHARS = 80
