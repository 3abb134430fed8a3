package mysqlstore

import (
	"time"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// ageFromMicros converts an age the server reported (how long ago a record
// was claimed or held) to a duration, never negative. A statement reads
// UTC_TIMESTAMP(6) when it starts, before InnoDB gives it its read view, so
// it may see a claim that committed in between as made after its "now";
// that claim is zero old, not in the future.
func ageFromMicros(us int64) time.Duration { return sqlstore.FromMicros(max(us, 0)) }
