-- The change-hash version each warehouse merge target was last published
-- with. Existing targets are not guessed: etl-craft rehash upgrades them and
-- records their version. The trigger refresh gives the table its write and
-- TRUNCATE guards.

CREATE TABLE AUD_TARGET_HASH_VERSION (
    TARGET_OBJECT VARCHAR PRIMARY KEY,
    HASH_VERSION  INTEGER NOT NULL,
    RECOMPUTED_AT TIMESTAMPTZ NOT NULL,
    CONSTRAINT ck_target_hash_version CHECK (HASH_VERSION IN (1, 2))
);
