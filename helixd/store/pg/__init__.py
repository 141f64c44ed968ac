"""The fleet's PostgreSQL: its schema and migrations (``schema``), opening a connection
(``connect``), the mirror's writes (``mirror``) and the fleet reports' queries (``queries``).
psycopg 3 is imported only here and only when a fleet command or job runs."""
