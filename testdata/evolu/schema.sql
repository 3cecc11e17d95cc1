create table evolu_timestamp (
  "ownerId" blob not null,
  "t" blob not null,
  "h1" integer,
  "h2" integer,
  "c" integer,
  "l" integer not null,
  primary key ("ownerId", "t")
)
strict;
create index evolu_timestamp_index on evolu_timestamp (
  "ownerId",
  "l",
  "t",
  "h1",
  "h2",
  "c"
);
