"""The fleet mirror (issue 17): this machine's Tier 2 pushed to one PostgreSQL that a team
shares, through the store's transactional outbox.

* ``target``: where to push and as whom (built by the entry points from the settings);
* ``secret``: the password, from the environment or a 0600 file, never from the config;
* ``shape``: what leaves the machine (no conversation text unless ``include_text``);
* ``push``: one push — switch the outbox on, register the machine, ship batches, confirm;
* ``backoff``: how long to wait after failed pushes (pure);
* ``job``: the daemon's scheduled push, with backoff while the server is away;
* ``status``: what ``helixctl fleet status``, ``status`` and ``doctor`` show.

The SQL lives in ``helixd/store/`` (``outbox.py`` on the SQLite side, ``pg/`` on the server);
the fleet reports are ``helixd/query/fleet.py``.
"""
