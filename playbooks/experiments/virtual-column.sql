-- The lookup the virtual-column study measures (playbooks/experiments/virtual-column.toml): find the rows whose
-- CRC32 of c equals that of a row drawn at random (:id, sysbench's special distribution). {c_crc} is the
-- generated column on the arms whose copy has it, and its expression, computed in the query, on the baseline's.
-- The inner SELECT is a primary-key lookup the server evaluates once per statement.
SELECT id FROM sbtest1 WHERE {c_crc} = (SELECT CRC32(RTRIM(c)) FROM sbtest1 WHERE id = :id);
