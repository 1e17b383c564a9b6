-- The change-hash version each warehouse merge target was last published
-- with. Existing targets are not guessed: etl-craft rehash upgrades them and
-- records their version. The trigger refresh gives the table its write guard.

CREATE TABLE AUD_TARGET_HASH_VERSION (
    TARGET_OBJECT VARCHAR NOT NULL PRIMARY KEY,
    HASH_VERSION  INTEGER NOT NULL,
    RECOMPUTED_AT TIMESTAMP NOT NULL,
    CONSTRAINT ck_target_hash_version CHECK (HASH_VERSION IN (1, 2))
);
