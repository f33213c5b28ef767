"""Files made searchable: their text extracted (:mod:`.extract`), cut into chunks of
tokens (:mod:`.chunking`), embedded and kept in the background (:mod:`.ingest`), and the
searches over vector stores (:mod:`.search`)."""
