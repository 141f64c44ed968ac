"""The store: the only code in Helix that speaks SQL (this package).

One SQLite file in WAL mode.  ``database.Store`` owns the writer connection (on a thread of
its own, ``connection``), runs the migrations and exposes the write path (``commit``:
records + cursor in one transaction) and the queries the daemon's passes need;
``readonly.open_reader`` gives the read layer (``helixd/query/``) its connections.  This
``__init__`` imports nothing, so that a read
command loads only the modules it uses.
"""
