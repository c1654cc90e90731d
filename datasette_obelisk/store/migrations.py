"""The schema, built by numbered migrations.

Table and column names follow the Obelisk helper contract where it names
them, so SQL written against that contract runs unchanged here.
"""

from sqlite_utils import Migrations

migrations = Migrations("datasette_obelisk")


@migrations()
def m001_create_tables(db):
    # One row per source file: the byte cursor, the fingerprint that tells a
    # grown file from a rewritten one, and the parser state at the cursor.
    db.executescript(
        """
        CREATE TABLE source_files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            layout TEXT NOT NULL DEFAULT 'jsonl',
            compression TEXT,
            device INTEGER,
            inode INTEGER,
            size INTEGER,
            mtime_ns INTEGER,
            head_hash TEXT,
            tail_hash TEXT,
            cursor INTEGER NOT NULL DEFAULT 0,
            line_no INTEGER NOT NULL DEFAULT 0,
            pending_bytes INTEGER NOT NULL DEFAULT 0,
            parser_version INTEGER,
            parser_state TEXT,
            generation INTEGER NOT NULL DEFAULT 0,
            missing INTEGER NOT NULL DEFAULT 0,
            lines_read INTEGER NOT NULL DEFAULT 0,
            lines_stored INTEGER NOT NULL DEFAULT 0,
            lines_merged INTEGER NOT NULL DEFAULT 0,
            lines_failed INTEGER NOT NULL DEFAULT 0,
            first_seen_at TEXT,
            ingested_at TEXT,
            last_error TEXT
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            title TEXT,
            title_source TEXT,
            project TEXT,
            project_path TEXT,
            cwd TEXT,
            git_branch TEXT,
            git_commit TEXT,
            repository TEXT,
            version TEXT,
            model TEXT,
            originator TEXT,
            started_at TEXT,
            ended_at TEXT,
            message_count INTEGER NOT NULL DEFAULT 0,
            parent_session_id TEXT,
            relationship TEXT,
            agent_id TEXT,
            agent_type TEXT,
            is_excluded INTEGER,
            availability TEXT NOT NULL DEFAULT 'live',
            jsonl_path TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT
        );
        -- An explicit integer key: external-content FTS is keyed by it, and
        -- implicit rowids are not stable across VACUUM.
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            source TEXT NOT NULL,
            type TEXT NOT NULL,
            subtype TEXT,
            role TEXT,
            parent_uuid TEXT,
            logical_parent_uuid TEXT,
            timestamp TEXT,
            text TEXT NOT NULL DEFAULT '',
            text_length INTEGER NOT NULL DEFAULT 0,
            content_type TEXT,
            is_meta INTEGER NOT NULL DEFAULT 0,
            visibility TEXT NOT NULL DEFAULT 'visible',
            surface TEXT NOT NULL DEFAULT 'current',
            replaced_by TEXT,
            is_sidechain INTEGER NOT NULL DEFAULT 0,
            is_compact_summary INTEGER NOT NULL DEFAULT 0,
            agent_id TEXT,
            model TEXT,
            cwd TEXT,
            git_branch TEXT,
            api_message_id TEXT,
            request_id TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cache_read_tokens INTEGER,
            cache_creation_tokens INTEGER,
            usage_counted INTEGER NOT NULL DEFAULT 0,
            stop_reason TEXT,
            turn_duration_ms INTEGER,
            meta_json TEXT,
            file_id INTEGER NOT NULL,
            line_no INTEGER NOT NULL,
            byte_offset INTEGER NOT NULL,
            byte_length INTEGER NOT NULL
        );
        CREATE TABLE tool_calls (
            id TEXT PRIMARY KEY,
            message_uuid TEXT NOT NULL,
            session_id TEXT NOT NULL,
            name TEXT NOT NULL,
            presentation TEXT NOT NULL DEFAULT 'default',
            input_json TEXT,
            file_path TEXT,
            timestamp TEXT,
            file_id INTEGER NOT NULL
        );
        CREATE TABLE tool_call_files (
            tool_call_id TEXT NOT NULL,
            path TEXT NOT NULL,
            PRIMARY KEY (tool_call_id, path)
        );
        CREATE TABLE tool_results (
            id INTEGER PRIMARY KEY,
            tool_use_id TEXT NOT NULL UNIQUE,
            message_uuid TEXT NOT NULL,
            session_id TEXT NOT NULL,
            content TEXT NOT NULL DEFAULT '',
            content_length INTEGER NOT NULL DEFAULT 0,
            file_path TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            outcome TEXT NOT NULL DEFAULT 'succeeded',
            exit_code INTEGER,
            agent_id TEXT,
            timestamp TEXT,
            file_id INTEGER NOT NULL
        );
        CREATE TABLE subagents (
            id INTEGER PRIMARY KEY,
            agent_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            child_session_id TEXT,
            parent_tool_use_id TEXT,
            agent_type TEXT,
            description TEXT,
            duration_ms INTEGER,
            total_tokens INTEGER,
            UNIQUE (session_id, agent_id)
        );
        CREATE TABLE workflows (
            run_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            parent_tool_use_id TEXT,
            task_id TEXT,
            script TEXT,
            result_json TEXT,
            timestamp TEXT,
            agent_count INTEGER,
            duration_ms INTEGER,
            total_tokens INTEGER,
            status TEXT,
            workflow_name TEXT,
            file_id INTEGER
        );
        CREATE TABLE workflow_agents (
            agent_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            agent_type TEXT,
            description TEXT,
            phase TEXT,
            label TEXT,
            model TEXT,
            state TEXT,
            duration_ms INTEGER,
            tokens INTEGER,
            tool_calls INTEGER,
            file_id INTEGER
        );
        -- summaries.source is the summary kind (away_summary, compaction),
        -- not the agent that wrote the log.
        CREATE TABLE summaries (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            timestamp TEXT,
            source TEXT NOT NULL,
            content TEXT NOT NULL DEFAULT '',
            visibility TEXT NOT NULL DEFAULT 'visible',
            message_uuid TEXT,
            file_id INTEGER NOT NULL
        );
        -- Every title a log offers; the store picks one by precedence.
        CREATE TABLE titles (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            timestamp TEXT,
            leaf_uuid TEXT,
            file_id INTEGER NOT NULL
        );
        -- Memories are written by people, never derived from logs: the one
        -- table a rebuild must not touch.
        CREATE TABLE memories (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT,
            project TEXT,
            message_start TEXT,
            message_end TEXT,
            path TEXT NOT NULL,
            anchors TEXT,
            summary TEXT NOT NULL,
            created_at TEXT NOT NULL,
            deleted_at TEXT,
            deleted_reason TEXT
        );
        CREATE TABLE ingest_errors (
            id INTEGER PRIMARY KEY,
            file_id INTEGER,
            path TEXT NOT NULL,
            line_no INTEGER,
            byte_offset INTEGER,
            byte_length INTEGER,
            reason TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (path, byte_offset)
        );
        -- Sessions whose derived fields (titles, surfaces, totals) must be
        -- recomputed; filled in the same transaction as the rows that
        -- changed them, so a crash never leaves a session underived.
        CREATE TABLE derive_queue (
            session_id TEXT PRIMARY KEY
        );
        CREATE TABLE obelisk_state (
            key TEXT PRIMARY KEY,
            value TEXT
        );
        """
    )


@migrations()
def m002_create_fts(db):
    # External-content FTS5 over message text, failed tool output and
    # memories. Insert triggers are skipped while the ingester holds the
    # 'bulk' flag inside its own transaction: it then indexes the new rows
    # with one INSERT ... SELECT, which is several times faster than
    # per-row trigger inserts. Other writers always go through the triggers.
    db.executescript(
        """
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER messages_ai AFTER INSERT ON messages
        WHEN NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
        BEGIN
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
        END;
        CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
        END;
        CREATE TRIGGER messages_au AFTER UPDATE OF text ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
        END;

        CREATE VIRTUAL TABLE tool_errors_fts USING fts5(
            content, content='tool_results', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER tool_results_ai AFTER INSERT ON tool_results
        WHEN new.outcome = 'failed'
            AND NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
        BEGIN
            INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER tool_results_ad AFTER DELETE ON tool_results
        WHEN old.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER tool_results_au_old AFTER UPDATE OF content, outcome ON tool_results
        WHEN old.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER tool_results_au_new AFTER UPDATE OF content, outcome ON tool_results
        WHEN new.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, new.content);
        END;

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            path, summary, content='memories', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, path, summary)
            VALUES (new.pk, new.path, new.summary);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, path, summary)
            VALUES ('delete', old.pk, old.path, old.summary);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF path, summary ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, path, summary)
            VALUES ('delete', old.pk, old.path, old.summary);
            INSERT INTO memories_fts (rowid, path, summary)
            VALUES (new.pk, new.path, new.summary);
        END;
        """
    )


@migrations()
def m003_create_indexes(db):
    # The lookups the ingester and the query helpers make on every call.
    db.executescript(
        """
        CREATE INDEX messages_session_seq ON messages (session_id, seq);
        CREATE INDEX messages_session_time ON messages (session_id, timestamp);
        CREATE INDEX messages_parent ON messages (parent_uuid);
        CREATE INDEX messages_file ON messages (file_id, byte_offset);
        CREATE INDEX messages_api_message ON messages (api_message_id)
            WHERE api_message_id IS NOT NULL;
        CREATE INDEX messages_timestamp ON messages (timestamp);
        CREATE INDEX messages_cwd ON messages (cwd);
        CREATE INDEX sessions_parent ON sessions (parent_session_id);
        CREATE INDEX sessions_ended ON sessions (ended_at);
        CREATE INDEX sessions_project ON sessions (project);
        CREATE INDEX tool_calls_message ON tool_calls (message_uuid);
        CREATE INDEX tool_calls_session ON tool_calls (session_id);
        CREATE INDEX tool_calls_file ON tool_calls (file_id);
        CREATE INDEX tool_call_files_path ON tool_call_files (path);
        CREATE INDEX tool_results_message ON tool_results (message_uuid);
        CREATE INDEX tool_results_session ON tool_results (session_id);
        CREATE INDEX tool_results_file ON tool_results (file_id);
        CREATE INDEX tool_results_agent ON tool_results (agent_id)
            WHERE agent_id IS NOT NULL;
        CREATE INDEX subagents_child ON subagents (child_session_id);
        CREATE INDEX summaries_session ON summaries (session_id, timestamp);
        CREATE INDEX summaries_file ON summaries (file_id);
        CREATE INDEX titles_session ON titles (session_id);
        CREATE INDEX titles_leaf ON titles (leaf_uuid) WHERE leaf_uuid IS NOT NULL;
        CREATE INDEX titles_file ON titles (file_id);
        CREATE INDEX ingest_errors_file ON ingest_errors (file_id);
        CREATE INDEX memories_project ON memories (project);
        """
    )



@migrations()
def m004_create_session_index(db):
    # The session-level search index (see store/session_index.py): one bag
    # of words per session, so grouped search ranks sessions on it instead
    # of ranking every matching message; a covering index for the columns
    # search filters a session's matches by; and the key that signs search
    # cursors, so a cursor survives restarts but not edits.
    from .session_index import rebuild_session_documents

    db.executescript(
        """
        CREATE TABLE session_docs (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL UNIQUE,
            first_id INTEGER NOT NULL,
            last_id INTEGER NOT NULL,
            messages INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            meta_messages INTEGER NOT NULL,
            body_words TEXT NOT NULL,
            meta_words TEXT NOT NULL
        );
        -- Contentless: the bags are rebuilt from body_words / meta_words.
        CREATE VIRTUAL TABLE session_docs_fts USING fts5(
            body, meta, content='', tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE INDEX IF NOT EXISTS messages_session_rows
            ON messages (session_id, id, text_length, is_meta, visibility);
        INSERT OR IGNORE INTO obelisk_state (key, value)
        VALUES ('cursor_secret', lower(hex(randomblob(16))));
        """
    )
    rebuild_session_documents(db.conn)


@migrations()
def m005_create_audit_log(db):
    # Every write made through the web face (remember/forget) leaves a row
    # here: who, when, what and why. It is append-only and, like memories,
    # never touched by a rebuild, so a published database can show who
    # changed its memories. The web endpoints refuse to write without it.
    db.executescript(
        """
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY,
            created_at TEXT NOT NULL,
            actor_id TEXT,
            actor_json TEXT,
            action TEXT NOT NULL,
            database_name TEXT,
            memory_id TEXT,
            reason TEXT,
            detail_json TEXT
        );
        CREATE INDEX audit_log_memory ON audit_log (memory_id);
        """
    )


@migrations()
def m006_create_browse_views(db):
    # Datasette computes facets and full-text search only on tables and
    # views, not on stored queries. These two views put the columns people
    # filter by (source, project, branch, role, model, tool, outcome, date)
    # beside each message and each tool call, so Datasette's own table pages
    # facet and search them with no configuration; the plugin points their
    # `_search` at messages_fts / tool_errors_fts through `id` / `result_id`.
    db.executescript(
        """
        CREATE VIEW browse_messages AS
        SELECT
            m.id, m.uuid, m.session_id, m.seq, m.timestamp, m.source,
            s.project, COALESCE(m.git_branch, s.git_branch) AS branch,
            m.role, m.type, m.content_type, m.model, m.surface, m.is_meta,
            COALESCE(
                (SELECT c.name FROM tool_calls c WHERE c.message_uuid = m.uuid LIMIT 1),
                (SELECT c.name FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id
                 WHERE r.message_uuid = m.uuid LIMIT 1)
            ) AS tool_name,
            COALESCE(
                (SELECT r.outcome FROM tool_results r WHERE r.message_uuid = m.uuid LIMIT 1),
                (SELECT r.outcome FROM tool_calls c JOIN tool_results r ON r.tool_use_id = c.id
                 WHERE c.message_uuid = m.uuid LIMIT 1)
            ) AS outcome,
            s.title AS session_title, m.text
        FROM messages m
        LEFT JOIN sessions s ON s.id = m.session_id;

        CREATE VIEW browse_tool_calls AS
        SELECT
            c.id, c.session_id, c.timestamp, s.source, s.project,
            s.git_branch AS branch, m.model, c.name AS tool_name, r.outcome,
            r.exit_code, c.file_path, c.message_uuid, r.id AS result_id,
            c.input_json, substr(r.content, 1, 2000) AS result_preview,
            s.title AS session_title
        FROM tool_calls c
        LEFT JOIN tool_results r ON r.tool_use_id = c.id
        LEFT JOIN sessions s ON s.id = c.session_id
        LEFT JOIN messages m ON m.uuid = c.message_uuid;
        """
    )


@migrations()
def m007_create_file_sessions(db):
    # Which files mention which sessions, replays included. A rollout moved
    # to archived_sessions/ stores no new message (each one is a replay), yet
    # its session is still on disk: availability and jsonl_path follow this
    # table, not just the file each message was first read from. Title
    # candidates become unique so reading the same lines again adds none.
    # A project derived from the working folder is told from one the log
    # names, so the derived one can follow the folder as the log grows.
    db.executescript(
        """
        CREATE TABLE file_sessions (
            file_id INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            PRIMARY KEY (file_id, session_id)
        );
        CREATE INDEX file_sessions_session ON file_sessions (session_id);
        INSERT OR IGNORE INTO file_sessions (file_id, session_id)
            SELECT DISTINCT file_id, session_id FROM messages;
        DELETE FROM titles WHERE id NOT IN (
            SELECT MIN(id) FROM titles GROUP BY session_id, kind, title, ifnull(leaf_uuid, '')
        );
        CREATE UNIQUE INDEX titles_unique ON titles (session_id, kind, title, ifnull(leaf_uuid, ''));
        -- 'log' when the source named the project, 'cwd' when derived from
        -- the session's main folder (and so recomputed as the log grows).
        ALTER TABLE sessions ADD COLUMN project_source TEXT;
        UPDATE sessions SET project_source = 'log' WHERE project IS NOT NULL;
        """
    )


@migrations()
def m008_clip_stored_tool_output(db):
    # Tool output was stored twice: whole in messages.text and again in
    # tool_results.content, which doubled the largest part of every database
    # and of every ingest. Where the output is the message's whole text,
    # content now keeps its first 10,000 characters (see store/tool_output.py).
    from .tool_output import CLIP_STORED_SQL

    db.execute(CLIP_STORED_SQL)


@migrations()
def m009_index_ungrouped_sidechains(db):
    # Deriving a session first looks for its inline sidechain lines (Claude
    # <= 1.0) not yet grouped into a subagent session. Through the
    # (session_id, seq) index that read every row of the session; this
    # partial index holds only the lines still to group, usually none.
    db.execute(
        """CREATE INDEX messages_ungrouped_sidechain ON messages (session_id, seq)
           WHERE is_sidechain = 1 AND agent_id IS NULL"""
    )


@migrations()
def m010_rederive_compaction_boundaries(db):
    # A compaction's boundary line was stored as replaced by the summary,
    # though it was never model context and nothing replaced it. Derivation
    # no longer links it; the sessions holding such a link are derived again
    # by the next ingest, archived ones too (no file is read for that).
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT DISTINCT session_id FROM messages
           WHERE subtype = 'compact_boundary' AND surface = 'log-only' AND replaced_by IS NOT NULL"""
    )


@migrations()
def m011_create_message_aliases(db):
    # A uuid repeated with another text is not a replay: the later line is
    # stored as "<uuid>@<byte offset>", and the file's later lines naming
    # that uuid as parent mean that copy. The link outlives the batch here.
    db.execute(
        """CREATE TABLE message_aliases (
               file_id INTEGER NOT NULL,
               uuid TEXT NOT NULL,
               stored_as TEXT NOT NULL,
               PRIMARY KEY (file_id, uuid)
           ) WITHOUT ROWID"""
    )


@migrations()
def m012_add_agent_totals_to_tool_results(db):
    # A Task/Agent result records how long the agent it started ran and the
    # tokens it used. Claude <= 1.0 names no agent there (its inline agents
    # get their id when derived), so the totals wait on the result for them.
    # Claude's parser version 2 reads the files again to fill them.
    db.execute("ALTER TABLE tool_results ADD COLUMN agent_duration_ms INTEGER")
    db.execute("ALTER TABLE tool_results ADD COLUMN agent_tokens INTEGER")


@migrations()
def m013_create_session_digests(db):
    # history.search matches each session's digest (title and latest visible
    # summary). Scanning every session's digest per query cost ~0.1 s on a
    # 500 MB archive and had to stop somewhere; an index of their own makes it
    # one MATCH. Triggers follow titles and summaries; the last statement
    # fills the index for the sessions already stored.
    from .digests import digest_rows_sql, refresh_sql

    db.executescript(
        f"""
        CREATE TABLE session_digests (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            summary TEXT NOT NULL
        );
        CREATE VIRTUAL TABLE session_digests_fts USING fts5(
            title, summary, content='session_digests', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER session_digests_ai AFTER INSERT ON session_digests BEGIN
            INSERT INTO session_digests_fts (rowid, title, summary) VALUES (new.id, new.title, new.summary);
        END;
        CREATE TRIGGER session_digests_ad AFTER DELETE ON session_digests BEGIN
            INSERT INTO session_digests_fts (session_digests_fts, rowid, title, summary)
            VALUES ('delete', old.id, old.title, old.summary);
        END;
        CREATE TRIGGER session_digests_au AFTER UPDATE ON session_digests BEGIN
            INSERT INTO session_digests_fts (session_digests_fts, rowid, title, summary)
            VALUES ('delete', old.id, old.title, old.summary);
            INSERT INTO session_digests_fts (rowid, title, summary) VALUES (new.id, new.title, new.summary);
        END;
        CREATE TRIGGER sessions_digest_ai AFTER INSERT ON sessions BEGIN {refresh_sql("new.id", searched=False)} END;
        CREATE TRIGGER sessions_digest_au AFTER UPDATE OF title ON sessions BEGIN {refresh_sql("new.id", searched=False)} END;
        CREATE TRIGGER summaries_digest_ai AFTER INSERT ON summaries BEGIN {refresh_sql("new.session_id", searched=False)} END;
        CREATE TRIGGER summaries_digest_au AFTER UPDATE ON summaries BEGIN
            {refresh_sql("old.session_id", searched=False)} {refresh_sql("new.session_id", searched=False)}
        END;
        CREATE TRIGGER summaries_digest_ad AFTER DELETE ON summaries BEGIN {refresh_sql("old.session_id", searched=False)} END;
        """
    )
    db.execute(f"INSERT INTO session_digests (session_id, title, summary) {digest_rows_sql()} ORDER BY id")


@migrations()
def m014_add_rowid_to_browse_views(db):
    # Datasette searches one column (?_search_text=) with "rowid in (select
    # rowid from <fts> ...)" whatever fts_pk says, and a view has no rowid:
    # such a search found nothing. A column named rowid, the FTS key, fixes it.
    for view, key in (("browse_messages", "m.id"), ("browse_tool_calls", "r.id")):
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = ?", [view]).fetchone()
        head, _, rest = sql.partition("SELECT")
        db.execute(f"DROP VIEW {view}")
        db.execute(f"{head}SELECT {key} AS rowid,{rest}")


@migrations()
def m015_look_up_model_in_browse_tool_calls(db):
    # SQLite keeps every LEFT JOIN of a view in a GROUP BY over it, used or
    # not: each of Datasette's facets on browse_tool_calls looked up the
    # calling message of every call through the uuid index (~100 ms a facet
    # on 33,000 calls, ~30 ms without). The model is now a subquery, run only
    # where the model is read. messages.uuid is unique, so the rows and
    # values are those of m014. browse_messages keeps its join to sessions:
    # a filter on project then starts from the sessions of that project.
    db.executescript(
        """
        DROP VIEW browse_tool_calls;
        CREATE VIEW browse_tool_calls AS
        SELECT r.id AS rowid,
            c.id, c.session_id, c.timestamp, s.source, s.project,
            s.git_branch AS branch,
            (SELECT m.model FROM messages m WHERE m.uuid = c.message_uuid) AS model,
            c.name AS tool_name, r.outcome,
            r.exit_code, c.file_path, c.message_uuid, r.id AS result_id,
            c.input_json, substr(r.content, 1, 2000) AS result_preview,
            s.title AS session_title
        FROM tool_calls c
        LEFT JOIN tool_results r ON r.tool_use_id = c.id
        LEFT JOIN sessions s ON s.id = c.session_id;
        """
    )


@migrations()
def m016_reread_files_with_renamed_messages(db):
    # A message stored as "<uuid>@<offset>" (its uuid taken by another text)
    # left its line's tool calls, results and summary naming the plain uuid,
    # so they hung off the other message. The writer now renames them too;
    # the files holding such a message are read again by the next ingest.
    # Files gone from disk cannot be re-read and keep their links.
    db.execute(
        """UPDATE source_files SET parser_version = NULL
           WHERE missing = 0 AND id IN (SELECT file_id FROM message_aliases)"""
    )


@migrations()
def m017_queue_empty_sessions(db):
    # A session whose file a newer parser read again under another session id
    # stayed behind as an empty row. Derivation now deletes a session nothing
    # names any more; the empty ones are queued so the next ingest looks.
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT id FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"""
    )


@migrations()
def m018_add_file_sessions_started_at(db):
    # A session's start was the earliest time ever written to its row, so a
    # file read again (rewritten, or by a newer parser) could not move it
    # later. The start a file's own session record gives (Codex session_meta,
    # Gemini startTime) is now kept per file and deleted with the file's rows;
    # derivation takes the earliest of these and of the session's messages.
    # Each existing pair takes its session's current start, so nothing moves
    # until a file is read again.
    db.execute("ALTER TABLE file_sessions ADD COLUMN started_at TEXT")
    db.execute(
        """UPDATE file_sessions SET started_at =
           (SELECT started_at FROM sessions WHERE sessions.id = file_sessions.session_id)"""
    )


@migrations()
def m019_add_discovery_to_source_files(db):
    # A live refresh reads changed files again without discovering them, and a
    # log read again from its start takes the other files of its sessions
    # along. Each must be read as discovery found it: an agent file's parent
    # session and project come from its path, and parents are read before
    # their agents. The hints and read order discovery gave are now kept with
    # each file; the next ingest fills them in for the files already stored.
    db.execute("ALTER TABLE source_files ADD COLUMN hints TEXT")
    db.execute("ALTER TABLE source_files ADD COLUMN priority INTEGER")


@migrations()
def m020_index_tool_calls_by_timestamp(db):
    # Sorting browse_tool_calls by time (its newest calls first) built and
    # sorted every row of the view: 410 ms on 53,000 calls. With this index
    # the page reads its first rows in order, in a few milliseconds.
    db.execute("CREATE INDEX tool_calls_timestamp ON tool_calls (timestamp)")


@migrations()
def m021_rederive_conversation_counts(db):
    # message_count counted a reply's reasoning lines (Claude Code writes
    # each thinking block as a line of its own) and lines without content.
    # Every session is derived again by the next ingest. Results now name
    # their file (the call's, where the result names none), and ≤1.0 inline
    # agents take the directory and branch of their last line; rows of files
    # that are not read again are filled here.
    db.execute("INSERT OR IGNORE INTO derive_queue (session_id) SELECT id FROM sessions")
    db.execute(
        """UPDATE tool_results SET file_path =
           (SELECT file_path FROM tool_calls WHERE tool_calls.id = tool_results.tool_use_id)
           WHERE file_path IS NULL"""
    )
    db.execute(
        """UPDATE sessions SET
             cwd = (SELECT cwd FROM messages m WHERE m.session_id = sessions.id AND m.cwd IS NOT NULL
                    ORDER BY seq DESC LIMIT 1),
             git_branch = (SELECT git_branch FROM messages m WHERE m.session_id = sessions.id
                           AND m.git_branch IS NOT NULL ORDER BY seq DESC LIMIT 1)
           WHERE relationship = 'subagent' AND agent_id LIKE 'sidechain-%' AND cwd IS NULL"""
    )


@migrations()
def m022_create_pull_requests(db):
    # Claude Code writes a pr-link line when a session opens a pull request
    # (number, URL, repository); they were read as metadata and dropped.
    # Claude parser 8 reads its files again and keeps them here, one row per
    # session and URL, deleted with the rows of their file like titles.
    db.executescript(
        """
        CREATE TABLE pull_requests (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            url TEXT NOT NULL,
            number INTEGER,
            repository TEXT,
            timestamp TEXT,
            file_id INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX pull_requests_unique ON pull_requests (session_id, url);
        CREATE INDEX pull_requests_file ON pull_requests (file_id);
        """
    )


@migrations()
def m023_add_subagents_sources(db):
    # An agent's type and task were kept from whichever record gave them
    # first, so an incremental ingest could end with its spawning call's
    # words where one reading of the files gives its .meta.json's. Each row
    # now says where each came from (agent, result or call), and a more
    # telling source replaces a less telling one. Claude parser 8 reads the
    # files again, so the rows stored before it get their sources.
    db.execute("ALTER TABLE subagents ADD COLUMN agent_type_source TEXT")
    db.execute("ALTER TABLE subagents ADD COLUMN description_source TEXT")


@migrations()
def m024_add_sessions_reasoning_effort(db):
    # Claude Code (2.1.x assistant lines) and Codex (each turn's context)
    # record the reasoning effort the model was asked for; it was read and
    # dropped. Claude parser 8 and Codex parser 7 read the files again.
    db.execute("ALTER TABLE sessions ADD COLUMN reasoning_effort TEXT")


@migrations()
def m025_canonical_session_times(db):
    # A session's start and end were its rows' first and last timestamps as
    # the log wrote them, so listings sorted by them in text order put
    # `…+05:00` and `…31Z` out of time order. They are now kept in the
    # canonical UTC form (utc.py), which sorts as text in time order. A
    # session whose times were in another form may have had its first and
    # last picked in text order: it is derived again by the next ingest.
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT id FROM sessions
           WHERE strftime('%Y-%m-%dT%H:%M:%fZ', started_at) IS NOT started_at
              OR strftime('%Y-%m-%dT%H:%M:%fZ', ended_at) IS NOT ended_at"""
    )
    for column in ("started_at", "ended_at"):
        db.execute(
            f"UPDATE sessions SET {column} = strftime('%Y-%m-%dT%H:%M:%fZ', {column}) "
            f"WHERE strftime('%Y-%m-%dT%H:%M:%fZ', {column}) IS NOT {column} "
            f"AND strftime('%Y-%m-%dT%H:%M:%fZ', {column}) IS NOT NULL"
        )


@migrations()
def m026_recount_compacted_sessions(db):
    # A compaction's summary is written as a user message, but no one typed
    # it: it no longer counts in sessions.message_count. An inline agent's
    # summary stayed with the parent session when its line moved to the
    # agent's, and the agent lacked its parent's version and originator.
    # The summaries follow their lines here; the sessions holding a summary,
    # and the parents of inline agents, are derived again by the next
    # ingest, archived ones too (no log needs reading again).
    db.execute(
        """UPDATE summaries SET session_id = m.session_id FROM messages m
           WHERE m.uuid = summaries.message_uuid AND m.session_id != summaries.session_id"""
    )
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT DISTINCT session_id FROM messages WHERE is_compact_summary = 1
           UNION SELECT parent_session_id FROM sessions
           WHERE agent_id GLOB 'sidechain-*' AND parent_session_id IS NOT NULL"""
    )


@migrations()
def m027_mark_interruptions(db):
    # "[Request interrupted by user]" is a user line Claude Code writes when
    # a turn is stopped; it counted as a prompt in message_count. A line that
    # holds that note alone (no one typed it) now has content type
    # 'interruption', as the Claude parser gives it, and its session is
    # derived again by the next ingest.
    db.execute(
        """UPDATE messages SET content_type = 'interruption'
           WHERE source = 'claude' AND type = 'user' AND content_type = 'text'
             AND substr(text, 1, 28) = '[Request interrupted by user'
             AND instr(rtrim(text, ' ' || char(9) || char(10) || char(13)), ']')
                 = length(rtrim(text, ' ' || char(9) || char(10) || char(13)))
             AND instr(rtrim(text, ' ' || char(9) || char(10) || char(13)), char(10)) = 0"""
    )
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT DISTINCT session_id FROM messages WHERE content_type = 'interruption'"""
    )



@migrations()
def m028_reread_attachment_details(db):
    # What a hook that blocked or failed said, and the todo list a reminder
    # repeats, are status details the session-query contract searches; the
    # Claude parser stored them without text. Only the files holding such a
    # line are read again by the next ingest (a parser version bump would
    # read every Claude log); files gone from disk keep their lines as they are.
    db.execute(
        """UPDATE source_files SET parser_version = NULL
           WHERE missing = 0 AND id IN (
             SELECT file_id FROM messages WHERE source = 'claude' AND type = 'attachment'
               AND subtype IN ('hook_blocking_error', 'hook_non_blocking_error', 'todo_reminder'))"""
    )


@migrations()
def m029_reread_lone_surrogate_lines(db):
    # A line whose JSON holds an escaped lone surrogate (a JavaScript string
    # cut inside an emoji) was an error, its message lost; it is now read with
    # U+FFFD in its place. Only the files holding such an error are read again.
    db.execute(
        """UPDATE source_files SET parser_version = NULL
           WHERE missing = 0 AND id IN (SELECT file_id FROM ingest_errors WHERE reason LIKE 'invalid JSON: %surrogate%')"""
    )


@migrations()
def m030_reread_retitled_files(db):
    # A title set again (a session renamed back) now becomes the newest of its
    # kind; it was kept where it first came. The files of sessions given two
    # titles of one kind (a Codex thread renamed, its session index) are read
    # again by the next ingest. Claude's are anyway (parser version 9).
    db.execute(
        """UPDATE source_files SET parser_version = NULL
           WHERE missing = 0 AND id IN (
             SELECT file_id FROM titles WHERE kind != 'first_prompt'
             GROUP BY file_id, session_id, kind HAVING count(*) > 1)"""
    )


@migrations()
def m031_forget_gone_files_never_read(db):
    # A file gone from disk that no line was ever read from (a dangling link,
    # an empty file) now leaves no row, and its error goes with it; rows an
    # older version kept for such files go the same way.
    empty = """SELECT id FROM source_files f WHERE missing = 1 AND lines_read = 0
       AND NOT EXISTS (SELECT 1 FROM messages WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM tool_calls WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM tool_results WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM summaries WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM titles WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM pull_requests WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM file_sessions WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM message_aliases WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM workflows WHERE file_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM workflow_agents WHERE file_id = f.id)"""
    db.execute(f"DELETE FROM ingest_errors WHERE file_id IN ({empty})")
    db.execute(f"DELETE FROM source_files WHERE id IN ({empty})")


@migrations()
def m032_rederive_archived_sessions(db):
    # Derivation changed (the rewound branch that goes on is the one holding
    # the newest line; a workflow run is linked to the call naming it), and
    # an older compaction summary is known by its words. Logs still on disk
    # are read again (Claude parser 9); the rows of logs gone from disk are
    # fixed here, and their sessions, and those with workflow runs, derived
    # again by the next ingest.
    continued = "This session is being continued from a previous conversation"
    summaries = f"""SELECT uuid, session_id, timestamp, text, file_id FROM messages
       WHERE source = 'claude' AND type = 'user' AND content_type = 'text' AND parent_uuid IS NULL
         AND is_compact_summary = 0 AND substr(text, 1, {len(continued)}) = '{continued}'"""
    db.execute(
        f"""INSERT OR IGNORE INTO summaries (id, session_id, timestamp, source, content, message_uuid, file_id)
            SELECT uuid, session_id, timestamp, 'compaction', text, uuid, file_id FROM ({summaries})"""
    )
    # The summary was taken for the first prompt: the session's first real one
    # (as the parser picks it: typed by the user, not injected) takes its place.
    retitled = f"""SELECT session_id FROM titles WHERE kind = 'first_prompt'
        AND session_id IN (SELECT session_id FROM ({summaries}))
        AND substr(title, 1, {len(continued)}) = '{continued}'"""
    db.execute(f"CREATE TEMP TABLE m032_retitled AS {retitled}")
    db.execute("DELETE FROM titles WHERE kind = 'first_prompt' AND session_id IN (SELECT session_id FROM m032_retitled)")
    db.execute(
        f"""INSERT OR IGNORE INTO titles (session_id, kind, title, timestamp, file_id)
            SELECT m.session_id, 'first_prompt',
                   CASE WHEN length(m.text) <= 1000 THEN m.text ELSE substr(m.text, 1, 999) || '…' END,
                   m.timestamp, m.file_id
            FROM messages m WHERE m.id IN (
              SELECT (SELECT p.id FROM messages p
                      WHERE p.session_id = r.session_id AND p.type = 'user' AND p.role = 'user'
                        AND p.is_meta = 0 AND p.is_compact_summary = 0 AND p.is_sidechain = 0
                        AND p.content_type IN ('text', 'mixed') AND trim(p.text) != ''
                        AND substr(p.text, 1, {len(continued)}) != '{continued}'
                        AND substr(p.text, 1, 9) != '<command-' AND substr(p.text, 1, 28) != '[Request interrupted by user'
                      ORDER BY p.seq LIMIT 1)
              FROM m032_retitled r)"""
    )
    db.execute("DROP TABLE m032_retitled")
    db.execute(
        f"""INSERT OR IGNORE INTO derive_queue (session_id) SELECT session_id FROM ({summaries})"""
    )
    db.execute(
        f"""UPDATE messages SET is_compact_summary = 1 WHERE uuid IN (SELECT uuid FROM ({summaries}))"""
    )
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT session_id FROM file_sessions WHERE file_id IN (SELECT id FROM source_files WHERE missing = 1)
           UNION SELECT session_id FROM workflows"""
    )


@migrations()
def m033_refuse_older_parsers(db):
    # Codex parser 9 and Gemini parser 10 store what older ones cannot give
    # back (replies paired with their twins, tool calls re-appended, context
    # written as the user's). A version that knows no migration past m032
    # would read every Codex and Gemini log again with its older parsers and
    # write their rows over these: this migration exists so that it refuses
    # the database instead. (A parser newer than the running one is refused
    # too: ``db.refuse_newer_parsers``.) Nothing in the schema changes.
    db.execute("SELECT 1")


@migrations()
def m034_rederive_archived_rewinds(db):
    # Derivation changed: a first prompt edited and sent again (two prompts
    # with no parent) is a rewind. Logs still on disk are read again (Claude
    # parser 10); the sessions of logs gone from disk are derived again by the
    # next ingest. (And a version that knows no migration past m033 refuses
    # the database, as its older parsers would undo what the new ones store.)
    queue_archived_sessions(db)


def queue_archived_sessions(db):
    """Queue for the next ingest's derivation the sessions of logs gone from disk."""
    db.execute(
        """INSERT OR IGNORE INTO derive_queue (session_id)
           SELECT session_id FROM file_sessions WHERE file_id IN (SELECT id FROM source_files WHERE missing = 1)"""
    )


@migrations()
def m035_rederive_archived_agents_and_titles(db):
    # Derivation changed: an agent another agent started (Claude Code
    # 2.1.172+) sits under that agent, merged rows keep their best-ranked type
    # and task, and a summary titles by its leaf's place in the log. Logs
    # still on disk are read again (Claude parser 13); the sessions of logs
    # gone from disk are derived again by the next ingest.
    queue_archived_sessions(db)


@migrations()
def m036_index_cjk_characters_apart(db):
    # FTS5's unicode61 reads a run of Chinese, Japanese or Korean characters
    # as one word, so no word inside a CJK sentence could be found. Each CJK
    # character is now a word of its own (cjk.py): message text and failed
    # tool output keep that form beside them (NULL where it is the same), and
    # their FTS tables read it through a view and are indexed again; so are
    # the session bags, from their stored counts. A cold load killed half-way
    # is finished first (it would bring back the triggers it dropped). And
    # derivation changed (a nested agent adopted late takes its type): the
    # sessions of logs gone from disk are derived again by the next ingest.
    from .. import cjk
    from .cold_load import finish
    from .session_index import index_bags_again

    db.executescript(
        """
        ALTER TABLE messages ADD COLUMN search_text TEXT;
        ALTER TABLE tool_results ADD COLUMN search_content TEXT;
        """
    )
    finish(db.conn)  # (what it indexes is indexed again below)
    db.conn.create_function("obelisk_search_text", 1, cjk.search_text, deterministic=True)
    db.executescript(
        """
        DROP TRIGGER messages_ai;
        DROP TRIGGER messages_ad;
        DROP TRIGGER messages_au;
        DROP TRIGGER tool_results_ai;
        DROP TRIGGER tool_results_ad;
        DROP TRIGGER tool_results_au_old;
        DROP TRIGGER tool_results_au_new;
        DROP TABLE messages_fts;
        DROP TABLE tool_errors_fts;
        """
    )
    non_ascii = "*[^\x01-\x7f]*"
    db.execute(
        "UPDATE messages SET search_text = obelisk_search_text(text) WHERE text GLOB ?", [non_ascii]
    )
    db.execute(
        "UPDATE tool_results SET search_content = obelisk_search_text(content) "
        "WHERE outcome = 'failed' AND content GLOB ?",
        [non_ascii],
    )
    db.executescript(
        """
        CREATE VIEW messages_search AS
            SELECT id, coalesce(search_text, text) AS text FROM messages;
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages_search', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER messages_ai AFTER INSERT ON messages
        WHEN NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
        BEGIN
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text));
        END;
        CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text)
            VALUES ('delete', old.id, coalesce(old.search_text, old.text));
        END;
        CREATE TRIGGER messages_au AFTER UPDATE OF text, search_text ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text)
            VALUES ('delete', old.id, coalesce(old.search_text, old.text));
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text));
        END;
        INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

        CREATE VIEW tool_errors_search AS
            SELECT id, coalesce(search_content, content) AS content FROM tool_results WHERE outcome = 'failed';
        CREATE VIRTUAL TABLE tool_errors_fts USING fts5(
            content, content='tool_errors_search', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER tool_results_ai AFTER INSERT ON tool_results
        WHEN new.outcome = 'failed'
            AND NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
        BEGIN
            INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, coalesce(new.search_content, new.content));
        END;
        CREATE TRIGGER tool_results_ad AFTER DELETE ON tool_results
        WHEN old.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            VALUES ('delete', old.id, coalesce(old.search_content, old.content));
        END;
        CREATE TRIGGER tool_results_au_old AFTER UPDATE OF content, outcome, search_content ON tool_results
        WHEN old.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            VALUES ('delete', old.id, coalesce(old.search_content, old.content));
        END;
        CREATE TRIGGER tool_results_au_new AFTER UPDATE OF content, outcome, search_content ON tool_results
        WHEN new.outcome = 'failed'
        BEGIN
            INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, coalesce(new.search_content, new.content));
        END;
        INSERT INTO tool_errors_fts (tool_errors_fts) VALUES ('rebuild');
        """
    )
    index_bags_again(db.conn)
    queue_archived_sessions(db)


@migrations()
def m037_add_session_tags_and_continuations(db):
    # Claude Code sessions can carry a tag (the Agent SDK's tagSession; /resume
    # shows it as #tag and its filter matches it). Claude parser 16 reads it.
    db.execute("ALTER TABLE sessions ADD COLUMN tag TEXT")
    # And the session one went on in (``continued-in``), which derive makes its
    # child whichever is read first: looked up from the child, hence the index.
    db.execute("ALTER TABLE sessions ADD COLUMN continued_in TEXT")
    db.execute("CREATE INDEX sessions_continued_in ON sessions (continued_in) WHERE continued_in IS NOT NULL")


@migrations()
def m038_add_sessions_agent_and_team_names(db):
    # A Claude Code agent can be given a name (an Agent call's ``name``, kept in its
    # .meta.json; an agent team's member, whose lines carry ``agentName``) and be a
    # member of an agent team (``teamName``). Claude parser 17 reads them.
    db.execute("ALTER TABLE sessions ADD COLUMN agent_name TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN team_name TEXT")


@migrations()
def m039_add_sessions_cost_and_worktree(db):
    # What Claude Code reports of a session (2.1.x): its cost in USD and the lines
    # it added and removed (the last cost-state line), the folder it moved the
    # session's log to (relocated: the project's path), the git worktree it last
    # worked in with its branch and the one it was made from (worktree-state), and
    # that the model ended it (ended-by-model). Claude parser 17 reads them.
    db.execute("ALTER TABLE sessions ADD COLUMN cost_usd REAL")
    db.execute("ALTER TABLE sessions ADD COLUMN lines_added INTEGER")
    db.execute("ALTER TABLE sessions ADD COLUMN lines_removed INTEGER")
    db.execute("ALTER TABLE sessions ADD COLUMN relocated_cwd TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN worktree_path TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN worktree_branch TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN worktree_base_branch TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN ended_by_model INTEGER")


@migrations()
def m040_add_tool_results_output_uuid(db):
    # Claude Code (2.x) saves a tool's output too large for the context to a file
    # of its own and logs only its start; Claude parser 17 reads that file as a
    # message, which the result names: its stored output is then the whole
    # (tool_output.full_content_sql), whichever of the two was read first.
    db.execute("ALTER TABLE tool_results ADD COLUMN output_uuid TEXT")
    db.execute("CREATE INDEX tool_results_output ON tool_results (output_uuid) WHERE output_uuid IS NOT NULL")


@migrations()
def m041_merge_tool_result_update_triggers(db):
    # m036's two update triggers of tool_errors_fts (one taking the old output
    # out, one putting the new in) fire newest first: a failed result's output
    # rewritten in place (redaction's rules changed) was indexed before its old
    # words were taken out, so the words both held left the index and FTS5 found
    # it inconsistent. One trigger does both, in order; the index is rebuilt. A
    # cold load killed half-way is finished first (it would bring back the two).
    from .cold_load import finish

    finish(db.conn)
    db.executescript(
        """
        DROP TRIGGER IF EXISTS tool_results_au_old;
        DROP TRIGGER IF EXISTS tool_results_au_new;
        CREATE TRIGGER tool_results_au AFTER UPDATE OF content, outcome, search_content ON tool_results BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            SELECT 'delete', old.id, coalesce(old.search_content, old.content) WHERE old.outcome = 'failed';
            INSERT INTO tool_errors_fts (rowid, content)
            SELECT new.id, coalesce(new.search_content, new.content) WHERE new.outcome = 'failed';
        END;
        INSERT INTO tool_errors_fts (tool_errors_fts) VALUES ('rebuild');
        """
    )


@migrations()
def m042_create_session_links(db):
    # The parent another file names for a session (Codex's import ledger: the
    # Claude Code session a thread was imported from) was set on the session
    # only if it was stored when the file was read: a thread whose rollout came
    # later stayed without it. The links a file gives are kept here, deleted
    # with its rows like titles, and set when the session is derived. The links
    # already set are kept (a ledger gone from disk is not read again); the
    # ledgers still there are read again, and set those that were missed.
    db.executescript(
        """
        CREATE TABLE session_links (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            parent_session_id TEXT NOT NULL,
            relationship TEXT NOT NULL,
            file_id INTEGER NOT NULL
        );
        CREATE INDEX session_links_session ON session_links (session_id);
        CREATE INDEX session_links_file ON session_links (file_id);
        INSERT INTO session_links (session_id, parent_session_id, relationship, file_id)
        SELECT s.id, s.parent_session_id, s.relationship, min(f.id) FROM sessions s
          JOIN file_sessions fs ON fs.session_id = s.id JOIN source_files f ON f.id = fs.file_id
          WHERE s.relationship = 'import' AND s.parent_session_id IS NOT NULL AND f.kind = 'import_ledger'
          GROUP BY s.id;
        UPDATE source_files SET parser_version = NULL WHERE kind = 'import_ledger' AND missing = 0;
        """
    )


@migrations()
def m043_index_failed_tool_results(db):
    # The failures page and failures(), their counts, the overview's failure
    # totals and the stored query obelisk_failures read only the results that
    # failed (dashboard.failed(): a failed outcome or an error flag), yet found
    # them by scanning every tool result, outputs and all: the whole table,
    # twice for a failures page, three times for the overview (73 MB of a
    # 583 MB archive, the 500 MB benchmark corpus's). This index holds the
    # failures alone. Its WHERE is written as those queries write theirs,
    # which is how SQLite knows it may use it.
    db.execute("CREATE INDEX tool_results_failed ON tool_results (session_id) WHERE outcome = 'failed' OR is_error = 1")


@migrations()
def m044_index_conversation_messages(db):
    # The overview charts conversation messages per day and source
    # (dashboard.MESSAGES_PER_DAY): its WHERE reads content_type, is_meta and
    # visibility, columns stored after a message's text, so its scan of
    # messages read every text to reach them (280 MB of the 583 MB archive the
    # 500 MB benchmark corpus makes: 125 ms of CPU of the page's ~300). This
    # index holds the day and source of the conversation messages alone
    # (derive.CONVERSATION_SQL, written out as it stands: SQLite uses a partial
    # index only for a query whose WHERE says the same; a test checks they
    # still agree).
    db.execute(
        "CREATE INDEX messages_conversation ON messages (source, timestamp) "
        "WHERE role IN ('user', 'assistant') AND is_meta = 0 AND is_compact_summary = 0 AND visibility = 'visible' "
        "AND content_type NOT IN ('thinking', 'redacted_thinking', 'tool_result', 'tool_use', 'interruption')"
    )


@migrations()
def m045_key_ingest_errors_by_line(db):
    # An error row was known by its file and byte offset alone: of a document's
    # items (each at offset 0) only the last bad one kept its row, and an error
    # about the whole file (line 0, offset 0: it could not be read, or its
    # lines were all of unknown types) took the place of its first line's,
    # which a file read on from its cursor never wrote again. Its line is part
    # of its key now. Files that failed more lines than they have rows for are
    # read again, to write the rows they lost.
    db.executescript(
        """
        ALTER TABLE ingest_errors RENAME TO ingest_errors_unkeyed;
        CREATE TABLE ingest_errors (
            id INTEGER PRIMARY KEY,
            file_id INTEGER,
            path TEXT NOT NULL,
            line_no INTEGER,
            byte_offset INTEGER,
            byte_length INTEGER,
            reason TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (path, line_no, byte_offset)
        );
        INSERT INTO ingest_errors SELECT * FROM ingest_errors_unkeyed;
        DROP TABLE ingest_errors_unkeyed;
        CREATE INDEX ingest_errors_file ON ingest_errors (file_id);
        UPDATE source_files SET parser_version = NULL WHERE missing = 0 AND lines_failed > (
            SELECT COUNT(*) FROM ingest_errors WHERE file_id = source_files.id AND line_no > 0);
        """
    )


@migrations()
def m046_create_derive_tallies(db):
    # What deriving a session found in its rows up to the last one it saw:
    # a line appended to a long live session is then derived alone
    # (derive.plan_appended), not with the session's other 300,000 rows
    # (3.8 s and 415 MB a line). A row is written by each derivation and
    # dropped whenever a session's stored rows change otherwise (deleted to
    # be read again, moved to another session, reordered): the session is
    # then derived whole. Migrating empties this table first (db.migrate),
    # whatever a migration changes in the rows. Sessions derived before have none: their next
    # derivation is whole and writes it.
    db.execute(
        """CREATE TABLE derive_tallies (
            session_id TEXT PRIMARY KEY,
            last_id INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            started_at TEXT,
            ended_at TEXT,
            conversation INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_creation_tokens INTEGER NOT NULL,
            cwds TEXT NOT NULL,
            git_branch TEXT,
            model TEXT
        ) WITHOUT ROWID"""
    )


@migrations()
def m047_add_source_files_ctime(db):
    # A file rewritten in place with as many bytes and its modification time kept
    # (or set back) still has a new status-change time, which nothing can set:
    # a file whose ctime_ns moved, all else the same, has its bytes around the
    # cursor checked (ingest.Ingester.is_unchanged). Files stored before have
    # none until they are read next.
    db.execute("ALTER TABLE source_files ADD COLUMN ctime_ns INTEGER")


@migrations()
def m048_add_file_sessions_ended_at(db):
    # A session ended at its last message's time, though its log may say it
    # went on after that: Codex completes a turn (task_complete) after the
    # turn's last message and usage, a Gemini chat's lastUpdated is when its
    # file was last written (a reply's tokens or tool output recorded after
    # the reply), and a Claude Code line about the session (a prompt queued
    # while the agent was busy, a pull request linked) may be its last.
    # The latest time a file's lines give a session besides its messages is
    # kept per file, as the start is (m018); derivation takes the latest of
    # these and of the session's message times. Nothing moves until a file is
    # read again.
    db.execute("ALTER TABLE file_sessions ADD COLUMN ended_at TEXT")


@migrations()
def m049_index_error_flagged_results(db):
    # The failures list (query.dashboard.failed: a failed outcome or an error
    # flag) holds results tool_errors_fts left out: those flagged an error
    # whose outcome is another (a call refused or blocked, Codex's escalation
    # not granted, a command the user interrupted), so their output could not
    # be searched (a table page's ?_search=). The index reads every failure
    # now (tool_output.FAILURE_SQL), whose output is kept whole and in the
    # form it indexes; that of the flagged results clipped before is taken
    # again from their messages, and the index is rebuilt. A cold load killed
    # half-way is finished first (it would bring back the triggers dropped).
    from .. import cjk
    from .cold_load import finish
    from .tool_output import CLIP_CHARS, full_content_sql

    finish(db.conn)
    db.conn.create_function("obelisk_search_text", 1, cjk.search_text, deterministic=True)
    db.executescript(
        """
        DROP TRIGGER IF EXISTS tool_results_ai;
        DROP TRIGGER IF EXISTS tool_results_ad;
        DROP TRIGGER IF EXISTS tool_results_au;
        DROP VIEW tool_errors_search;
        """
    )
    flagged = "is_error = 1 AND outcome != 'failed'"
    db.execute(
        f"UPDATE tool_results SET content = {full_content_sql('tool_results')} "
        f"WHERE {flagged} AND content_length > {CLIP_CHARS} AND length(content) < content_length"
    )
    db.execute(f"UPDATE tool_results SET search_content = obelisk_search_text(content) WHERE {flagged}")
    db.executescript(
        """
        CREATE VIEW tool_errors_search AS
            SELECT id, coalesce(search_content, content) AS content FROM tool_results
            WHERE outcome = 'failed' OR is_error = 1;
        CREATE TRIGGER tool_results_ai AFTER INSERT ON tool_results
        WHEN (new.outcome = 'failed' OR new.is_error = 1)
            AND NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
        BEGIN
            INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, coalesce(new.search_content, new.content));
        END;
        CREATE TRIGGER tool_results_ad AFTER DELETE ON tool_results
        WHEN old.outcome = 'failed' OR old.is_error = 1
        BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            VALUES ('delete', old.id, coalesce(old.search_content, old.content));
        END;
        CREATE TRIGGER tool_results_au AFTER UPDATE OF content, outcome, is_error, search_content ON tool_results BEGIN
            INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
            SELECT 'delete', old.id, coalesce(old.search_content, old.content)
            WHERE old.outcome = 'failed' OR old.is_error = 1;
            INSERT INTO tool_errors_fts (rowid, content)
            SELECT new.id, coalesce(new.search_content, new.content)
            WHERE new.outcome = 'failed' OR new.is_error = 1;
        END;
        INSERT INTO tool_errors_fts (tool_errors_fts) VALUES ('rebuild');
        """
    )


@migrations()
def m050_normalise_file_paths(db):
    # The paths of tool calls were stored as the agent spelled them (/a//b,
    # /a/./b, /a/b/), so one file had several: a lookup of /a/b missed the
    # calls that wrote /a//b, and a page listing files listed it twice. They
    # are stored in their normal form now (sources.common.normal_path: only
    # the spelling changes; the call's input_json keeps the agent's), taken
    # of the redacted path as the writer takes it. The paths stored are
    # rewritten to what an ingest stores now: of a call's spellings of one
    # file, the first it stored is kept (its rows keep their order), the
    # others dropped (tool_call_files' key is the call and the path), as are
    # the call's first path (tool_calls.file_path) and the file its result
    # names (tool_results.file_path). No index or trigger reads these
    # columns but tool_call_files_path, kept in step by SQLite.
    from ..sources.common import normal_path

    db.conn.create_function(
        "obelisk_normal_path", 1, lambda path: normal_path(path) if isinstance(path, str) else path,
        deterministic=True,
    )
    odd = "path != obelisk_normal_path(path)"
    db.execute(
        f"""DELETE FROM tool_call_files WHERE rowid IN (
            SELECT f.rowid FROM tool_call_files f
            WHERE f.tool_call_id IN (SELECT tool_call_id FROM tool_call_files WHERE {odd})
              AND EXISTS (SELECT 1 FROM tool_call_files g
                          WHERE g.tool_call_id = f.tool_call_id AND g.rowid < f.rowid
                            AND obelisk_normal_path(g.path) = obelisk_normal_path(f.path)))"""
    )
    db.execute(f"UPDATE tool_call_files SET path = obelisk_normal_path(path) WHERE {odd}")
    for table in ("tool_calls", "tool_results"):
        db.execute(
            f"UPDATE {table} SET file_path = obelisk_normal_path(file_path) "
            "WHERE file_path IS NOT NULL AND file_path != obelisk_normal_path(file_path)"
        )


@migrations()
def m051_reread_invalid_utf8_lines(db):
    # A line holding bytes that are not UTF-8 (a Latin-1 byte in a tool's
    # output, a character cut short) was an error, its message lost (and a
    # Gemini chat document holding one lost every message). It is now kept
    # with those bytes read as U+FFFD, and reported (an ingest_errors row
    # whose reason starts "kept with repairs: "). Only the files holding such
    # an error are read again.
    db.execute(
        """UPDATE source_files SET parser_version = NULL
           WHERE missing = 0 AND id IN (
             SELECT file_id FROM ingest_errors WHERE reason LIKE 'invalid JSON: str is not valid UTF-8%')"""
    )


@migrations()
def m052_count_message_rewrites(db):
    # ``obelisk_state.rewrites`` counts the messages deleted, moved (another
    # session or seq) or whose searched text changed: search cursors go on
    # while messages are only added, and go stale once one of those happens.
    db.execute("INSERT OR IGNORE INTO obelisk_state (key, value) VALUES ('rewrites', '0')")
    bump = "UPDATE obelisk_state SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rewrites';"
    db.executescript(
        f"""
        CREATE TRIGGER messages_rewritten_ad AFTER DELETE ON messages BEGIN {bump} END;
        CREATE TRIGGER messages_rewritten_au AFTER UPDATE OF session_id, seq, text, search_text ON messages
        WHEN old.session_id IS NOT new.session_id OR old.seq IS NOT new.seq
          OR old.text IS NOT new.text OR old.search_text IS NOT new.search_text
        BEGIN {bump} END;
        """
    )


@migrations()
def m053_record_rewritten_ids(db):
    # A search cursor went stale on any rewrite counted in
    # ``obelisk_state.rewrites``, also of messages written after its first page
    # (an ingest moves the inline agents' lines it wrote), which it never saw:
    # each rewrite now also lowers the lowest message id rewritten in its span
    # (store/db.py, ``REWRITE_SPAN``), and a cursor is stale only when a
    # message it could have seen was rewritten. A message's surface changing
    # (shadowed by a compaction or a rewind arriving later), or its being
    # injected or hidden, is a rewrite too: a search filtered by surface, or
    # leaving injected lines out, finds other messages.
    from .cold_load import finish

    finish(db.conn)  # (a cold load killed half-way would restore the triggers it dropped as they were)
    db.execute(
        "INSERT OR IGNORE INTO obelisk_state (key, value) "
        "SELECT 'rewrites@' || printf('%019d', CAST(value AS INTEGER)), '' FROM obelisk_state WHERE key = 'rewrites'"
    )
    bump = (
        "UPDATE obelisk_state SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rewrites'; "
        "UPDATE obelisk_state SET value = old.id WHERE key = (SELECT MAX(key) FROM obelisk_state "
        "WHERE key >= 'rewrites@' AND key < 'rewrites@~') AND (value = '' OR CAST(value AS INTEGER) > old.id);"
    )
    db.executescript(
        f"""
        DROP TRIGGER IF EXISTS messages_rewritten_ad;
        DROP TRIGGER IF EXISTS messages_rewritten_au;
        CREATE TRIGGER messages_rewritten_ad AFTER DELETE ON messages BEGIN {bump} END;
        CREATE TRIGGER messages_rewritten_au
        AFTER UPDATE OF session_id, seq, text, search_text, surface, is_meta, visibility ON messages
        WHEN old.session_id IS NOT new.session_id OR old.seq IS NOT new.seq
          OR old.text IS NOT new.text OR old.search_text IS NOT new.search_text
          OR old.surface IS NOT new.surface OR old.is_meta IS NOT new.is_meta
          OR (old.visibility IS NOT new.visibility AND 'hidden' IN (old.visibility, new.visibility))
        BEGIN {bump} END;
        """
    )


@migrations()
def m054_create_prompt_log(db):
    # The agents' prompt logs (Claude Code's and Codex's history.jsonl, Gemini
    # CLI's logs.json) keep every prompt typed, also in sessions whose
    # transcript was cleaned up before it was ingested: one row a prompt,
    # searched through prompt_log_fts (kept by triggers; a cold load leaves
    # them be: a prompt log is small). ``browse_prompts`` says of each whether
    # its session's transcript is stored (``in_transcript``), so a search can
    # keep to what the transcripts lack. The prompt logs already on disk are
    # read by the next ingest, as new files.
    db.executescript(
        """
        CREATE TABLE prompt_log (
            id INTEGER PRIMARY KEY,
            source TEXT NOT NULL,
            session_id TEXT,
            project TEXT,
            timestamp TEXT,
            text TEXT NOT NULL,
            search_text TEXT,
            pasted_json TEXT,
            file_id INTEGER REFERENCES source_files(id),
            line_no INTEGER,
            byte_offset INTEGER,
            byte_length INTEGER
        );
        CREATE INDEX prompt_log_file ON prompt_log (file_id);
        CREATE INDEX prompt_log_session ON prompt_log (session_id, timestamp);
        CREATE INDEX prompt_log_timestamp ON prompt_log (timestamp);
        CREATE VIEW prompt_log_search AS
            SELECT id, coalesce(search_text, text) AS text FROM prompt_log;
        CREATE VIRTUAL TABLE prompt_log_fts USING fts5(
            text, content='prompt_log_search', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER prompt_log_ai AFTER INSERT ON prompt_log BEGIN
            INSERT INTO prompt_log_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text));
        END;
        CREATE TRIGGER prompt_log_ad AFTER DELETE ON prompt_log BEGIN
            INSERT INTO prompt_log_fts (prompt_log_fts, rowid, text)
            VALUES ('delete', old.id, coalesce(old.search_text, old.text));
        END;
        CREATE TRIGGER prompt_log_au AFTER UPDATE OF text, search_text ON prompt_log BEGIN
            INSERT INTO prompt_log_fts (prompt_log_fts, rowid, text)
            VALUES ('delete', old.id, coalesce(old.search_text, old.text));
            INSERT INTO prompt_log_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text));
        END;
        CREATE VIEW browse_prompts AS
            SELECT p.id, p.source, p.session_id, p.project, p.timestamp, p.text, p.pasted_json,
                   CAST(EXISTS (SELECT 1 FROM messages m WHERE m.session_id = p.session_id) AS INTEGER) AS in_transcript,
                   f.path AS file_path, p.line_no
            FROM prompt_log p LEFT JOIN source_files f ON f.id = p.file_id;
        """
    )


@migrations()
def m055_add_subagents_remote(db):
    # An agent or workflow Claude Code ran in a cloud session (its call's
    # result ``remote_launched``) is a subagent whose session is not on this
    # machine: its row keeps that session's URL and id. Claude parser 21 reads
    # the logs again, so the launches already stored get their rows.
    db.execute("ALTER TABLE subagents ADD COLUMN remote_url TEXT")
    db.execute("ALTER TABLE subagents ADD COLUMN remote_session_id TEXT")


# Whether a stored transcript holds the prompt ``p`` (``browse_prompts.in_transcript``,
# ``query/prompts.py``): its session's stored messages reach the prompt's time.
PROMPT_HOLD_WINDOW = 60  # seconds either side of the stored messages' first and last times
SESSION_STORED = "EXISTS (SELECT 1 FROM messages m WHERE m.session_id = p.session_id)"
PROMPT_HELD = (
    "CASE WHEN julianday(p.timestamp) IS NULL THEN " + SESSION_STORED + " ELSE coalesce(julianday(p.timestamp) "
    "BETWEEN julianday((SELECT min(m.timestamp) FROM messages m WHERE m.session_id = p.session_id)) - "
    f"{PROMPT_HOLD_WINDOW}.0 / 86400 "
    "AND julianday((SELECT max(m.timestamp) FROM messages m WHERE m.session_id = p.session_id)) + "
    f"{PROMPT_HOLD_WINDOW}.0 / 86400, " + SESSION_STORED + ") END"
)


@migrations()
def m056_hold_prompts_by_time(db):
    # A prompt is held by a stored transcript when the session's stored
    # messages reach its time (from a minute before their first to a minute
    # after their last: the prompt's own line is written just after it was
    # typed, Codex keeps whole seconds): a transcript ingested in part, the
    # rest cleaned up before the next ingest, holds its earlier prompts only.
    # A prompt with no time, or a session whose messages have none, is held
    # when any message of its session is stored, as before. Times are read
    # with julianday(): the sources keep them in more than one ISO form.
    db.executescript(
        f"""
        DROP VIEW browse_prompts;
        CREATE VIEW browse_prompts AS
            SELECT p.id, p.source, p.session_id, p.project, p.timestamp, p.text, p.pasted_json,
                   CAST({PROMPT_HELD} AS INTEGER) AS in_transcript,
                   f.path AS file_path, p.line_no
            FROM prompt_log p LEFT JOIN source_files f ON f.id = p.file_id;
        """
    )


# The stored timestamps of every session, in each session's log order (read in the
# index's order, no sort): m057_record_time_order.
TIME_ORDER_SCAN = """SELECT session_id, timestamp FROM messages INDEXED BY messages_session_seq
  WHERE timestamp IS NOT NULL ORDER BY session_id, seq"""


@migrations()
def m057_record_time_order(db):
    # Whether a session is in time order as logged: every stored timestamp is
    # canonical (its text is its instant) and none is earlier than one before it
    # in seq order. A page of such a session's thread is then read from the
    # (session_id, seq) index (query.obelisk.in_log_order), not placed and sorted
    # whole. Derivation keeps it (derive.Tally.ordered; a row appended out of order
    # clears it); here it is worked out for the sessions stored, as derivation does,
    # in one pass over the messages in the index's order (0.4 s for 300,000 rows;
    # a window over them in SQL took 1-2 s). NULL (a row no derivation wrote): not known.
    from itertools import groupby
    from operator import itemgetter

    from .derive import in_time_order, is_moment, moment

    db.execute("ALTER TABLE sessions ADD COLUMN time_ordered INTEGER")
    db.execute("ALTER TABLE derive_tallies ADD COLUMN time_ordered INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE sessions SET time_ordered = 1")
    out = []
    for session_id, rows in groupby(db.execute(TIME_ORDER_SCAN), itemgetter(0)):
        stamps = [row[1] for row in rows]
        if not all(isinstance(stamp, str) for stamp in stamps):
            out.append([session_id])
            continue
        if not in_time_order(stamps, [t for stamp in stamps if is_moment(stamp) and (t := moment(stamp))], None):
            out.append([session_id])
    db.conn.executemany("UPDATE sessions SET time_ordered = 0 WHERE id = ?", out)


@migrations()
def m058_index_emoji_apart(db):
    # FTS5's unicode61 read most emoji as separators (🚀, ✅) and the newest as
    # letters (🤖 joined the word it touched), so an emoji could not be
    # searched for. Each is now a word of its own, set apart and written as
    # the index keeps it (cjk.py, emoji.py): the searched form of the messages,
    # failed tool output and prompts holding one is written again (the FTS
    # triggers index it again), and so are the session bags holding one.
    # Only the rows holding an emoji are written (the texts beyond ASCII are
    # read, a GLOB of the emoji themselves took 4 s a MB): the logs are not
    # read again, and the rows without one keep their form. A cold load
    # killed half-way is finished first (its index would miss the rows).
    import json

    from .. import cjk, emoji
    from .cold_load import finish
    from .derive import SENT
    from .session_index import index_bags_anew
    from .tool_output import FAILURE_SQL

    finish(db.conn)
    db.conn.create_function("obelisk_may_hold_emoji", 1, emoji.may_hold, deterministic=True)

    def holding(table: str, column: str, where: str = "1") -> list[int]:
        return [row_id for (row_id,) in db.conn.execute(
            f"SELECT id FROM {table} WHERE {column} GLOB ? AND obelisk_may_hold_emoji({column}) AND {where}",
            ["*[^\x01-\x7f]*"])]

    for table, column, searched, where in (
        ("messages", "text", "search_text", f"search_text IS NOT '{SENT}'"),
        ("tool_results", "content", "search_content", FAILURE_SQL),
        ("prompt_log", "text", "search_text", "1"),
    ):
        ids = holding(table, column, where)
        for start in range(0, len(ids), 500):  # (a few texts in memory at a time: some are megabytes)
            rows = db.conn.execute(
                f"SELECT id, {column}, {searched} FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                [json.dumps(ids[start : start + 500])],
            ).fetchall()
            db.conn.executemany(
                f"UPDATE {table} SET {searched} = ? WHERE id = ?",
                [(new, row_id) for row_id, text, old in rows if (new := cjk.search_text(text)) != old],
            )
    docs = sorted(set(holding("session_docs", "body_words")) | set(holding("session_docs", "meta_words")))
    index_bags_anew(db.conn, docs, cjk.before_emoji)


@migrations()
def m059_index_digests_and_memories_apart(db):
    # Session titles, summaries and memories were indexed as written, so a CJK
    # word inside a sentence or an emoji (which a query now asks for set
    # apart, m058) could not be found in them. Their FTS tables now read a
    # search form, as messages do (cjk.py): session_digests and memories keep
    # it beside the text (NULL where it is the same), the digest triggers
    # clear it when a text changes and derivation writes it again
    # (digests.write_search_forms). The triggers are made again, so a cold
    # load killed half-way is finished first; the forms of the rows beyond
    # ASCII are written in Python and both indexes built again (one row a
    # session or a memory). No log is read again.
    from .. import cjk
    from .cold_load import finish
    from .digests import refresh_sql, write_search_forms

    finish(db.conn)
    db.executescript(
        f"""
        ALTER TABLE session_digests ADD COLUMN search_title TEXT;
        ALTER TABLE session_digests ADD COLUMN search_summary TEXT;
        ALTER TABLE memories ADD COLUMN search_summary TEXT;
        DROP TRIGGER session_digests_ai;
        DROP TRIGGER session_digests_ad;
        DROP TRIGGER session_digests_au;
        DROP TRIGGER sessions_digest_ai;
        DROP TRIGGER sessions_digest_au;
        DROP TRIGGER summaries_digest_ai;
        DROP TRIGGER summaries_digest_au;
        DROP TRIGGER summaries_digest_ad;
        DROP TRIGGER memories_ai;
        DROP TRIGGER memories_ad;
        DROP TRIGGER memories_au;
        DROP TABLE session_digests_fts;
        DROP TABLE memories_fts;
        """
    )
    write_search_forms(db.conn)
    rows = db.conn.execute("SELECT pk, summary FROM memories WHERE summary GLOB ?", ["*[^\x01-\x7f]*"])
    db.conn.executemany(
        "UPDATE memories SET search_summary = ? WHERE pk = ?",
        [(form, pk) for pk, summary in rows.fetchall() if (form := cjk.search_text(summary)) is not None],
    )
    db.executescript(
        f"""
        CREATE VIEW session_digests_search AS
            SELECT id, coalesce(search_title, title) AS title, coalesce(search_summary, summary) AS summary
            FROM session_digests;
        CREATE VIRTUAL TABLE session_digests_fts USING fts5(
            title, summary, content='session_digests_search', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER session_digests_ai AFTER INSERT ON session_digests BEGIN
            INSERT INTO session_digests_fts (rowid, title, summary)
            VALUES (new.id, coalesce(new.search_title, new.title), coalesce(new.search_summary, new.summary));
        END;
        CREATE TRIGGER session_digests_ad AFTER DELETE ON session_digests BEGIN
            INSERT INTO session_digests_fts (session_digests_fts, rowid, title, summary)
            VALUES ('delete', old.id, coalesce(old.search_title, old.title), coalesce(old.search_summary, old.summary));
        END;
        CREATE TRIGGER session_digests_au AFTER UPDATE ON session_digests BEGIN
            INSERT INTO session_digests_fts (session_digests_fts, rowid, title, summary)
            VALUES ('delete', old.id, coalesce(old.search_title, old.title), coalesce(old.search_summary, old.summary));
            INSERT INTO session_digests_fts (rowid, title, summary)
            VALUES (new.id, coalesce(new.search_title, new.title), coalesce(new.search_summary, new.summary));
        END;
        CREATE TRIGGER sessions_digest_ai AFTER INSERT ON sessions BEGIN {refresh_sql("new.id")} END;
        CREATE TRIGGER sessions_digest_au AFTER UPDATE OF title ON sessions BEGIN {refresh_sql("new.id")} END;
        CREATE TRIGGER summaries_digest_ai AFTER INSERT ON summaries BEGIN {refresh_sql("new.session_id")} END;
        CREATE TRIGGER summaries_digest_au AFTER UPDATE ON summaries BEGIN
            {refresh_sql("old.session_id")} {refresh_sql("new.session_id")}
        END;
        CREATE TRIGGER summaries_digest_ad AFTER DELETE ON summaries BEGIN {refresh_sql("old.session_id")} END;

        CREATE VIEW memories_search AS
            SELECT pk, path, coalesce(search_summary, summary) AS summary FROM memories;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            path, summary, content='memories_search', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, path, summary)
            VALUES (new.pk, new.path, coalesce(new.search_summary, new.summary));
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, path, summary)
            VALUES ('delete', old.pk, old.path, coalesce(old.search_summary, old.summary));
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF path, summary, search_summary ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, path, summary)
            VALUES ('delete', old.pk, old.path, coalesce(old.search_summary, old.summary));
            INSERT INTO memories_fts (rowid, path, summary)
            VALUES (new.pk, new.path, coalesce(new.search_summary, new.summary));
        END;
        INSERT INTO session_digests_fts (session_digests_fts) VALUES ('rebuild');
        INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
        """
    )


@migrations()
def m060_index_tool_names_and_odd_roles(db):
    # A search or session list narrowed to a tool asked every event of every
    # session for its tool (two lookups an event): a tool few sessions called,
    # or none did, took 0.8-1.6 s on a 200,000-event archive (the generator's
    # 400 MB), and a name no call has gave no word of it. tool_calls_name finds
    # the sessions holding a call of a tool, and whether any call has a name,
    # at once. A role beyond the speakers (user, assistant, system, developer,
    # tool), which a misspelt role filter or event type is checked against,
    # was looked for by scanning every message; the few rows holding one are
    # indexed alone (query/events.py OTHER_ROLE_SQL, written out as it stands:
    # SQLite uses a partial index only for a query whose WHERE says the same),
    # as are the structural lines whose subtype is "message" (none is known),
    # whose types read as a role's message. Ingesting built-in logs adds no
    # row to either. No log is read again.
    db.executescript(
        """
        CREATE INDEX tool_calls_name ON tool_calls (name);
        CREATE INDEX messages_other_role ON messages (role)
            WHERE role NOT IN ('user', 'assistant', 'system', 'developer', 'tool');
        CREATE INDEX messages_message_lines ON messages (type) WHERE surface = 'log-only' AND subtype = 'message';
        """
    )


@migrations()
def m061_index_other_kinds(db):
    # A session-query type filter of a kind no event has (tool/cal, summry)
    # matched nothing and said nothing; it is refused now, and a kind the
    # built-in parsers never write is taken only when a stored row has it (a
    # source plugin's own, or a line type a newer agent writes). Telling so
    # would scan every message: the few rows of such a kind are indexed alone
    # (query/events.py OTHER_KIND_SQL, written out as it stands: SQLite uses a
    # partial index only for a query whose WHERE says the same). Ingesting
    # built-in logs adds no row to it. No log is read again.
    db.executescript(
        """
        CREATE INDEX messages_other_kind ON messages (type) WHERE type NOT IN (
            'assistant', 'attachment', 'progress', 'queue-operation', 'system', 'tool_output', 'user',
            'compacted', 'event_msg', 'inter_agent_communication', 'response_item',
            'compaction', 'error', 'gemini', 'info', 'rewind', 'tool_result', 'unknown', 'warning');
        """
    )


@migrations()
def m062_index_open_subtypes(db):
    # A type filter's subtype was never checked: system/compact_boundry or
    # scroll/prat matched nothing and said nothing. A subtype is now refused
    # unless an event of its kind can have it; for a kind whose subtypes are
    # its logs' own words (Claude Code's system, attachment and progress
    # lines, a source plugin's kinds) that is when a stored row has it, which
    # would scan every message. Those rows are indexed apart (query/events.py
    # OPEN_SUBTYPE_SQL, written out as it stands: SQLite uses a partial index
    # only for a query whose WHERE says the same); Codex's and Gemini CLI's
    # rows, whose subtypes their parsers give, add none. No log is read again.
    db.executescript(
        """
        CREATE INDEX messages_open_subtypes ON messages (type, subtype) WHERE subtype IS NOT NULL AND type NOT IN (
            'queue-operation', 'tool_output', 'compacted', 'event_msg', 'inter_agent_communication', 'response_item',
            'compaction', 'error', 'gemini', 'info', 'rewind', 'tool_result', 'warning');
        """
    )


@migrations()
def m063_index_spawning_calls(db):
    # A transcript page joins each of its tool calls to the agent or workflow
    # it started (query/transcript.py tool_calls), and a helper's notes join a
    # message's calls to their agents (query/obelisk.py message_notes). With
    # no index on the calling id, SQLite read every agent of the session for
    # each call and built a throwaway index of every workflow for each page.
    # Both tables hold a few rows per session: the indexes cost nothing to keep.
    db.executescript(
        """
        CREATE INDEX subagents_tool_call ON subagents (parent_tool_use_id);
        CREATE INDEX workflows_tool_call ON workflows (parent_tool_use_id);
        """
    )
