package redisstore

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sectionServer answers INFO as a server that refuses several sections
// at once (NOPERM) and shows only the sections in shown, alone, with the
// replies given there; every other method of it is nil. It serves
// inspect's decisions on servers no local one can be (a cluster node
// whose user may read INFO cluster only, a LOADING reply after a refusal).
type sectionServer struct {
	redis.UniversalClient
	f *fakeInfo
}

func (s sectionServer) Info(ctx context.Context, sections ...string) *redis.StringCmd {
	return s.f.Info(ctx, sections...)
}

func newSectionServer(shown map[string]string, errs map[string]error) sectionServer {
	return sectionServer{f: &fakeInfo{reply: func(sections []string) (string, error) {
		if len(sections) == 1 {
			if err, ok := errs[sections[0]]; ok {
				return "", err
			}
			if reply, ok := shown[sections[0]]; ok {
				return reply, nil
			}
		}
		return "", redisError("NOPERM User u has no permissions to run the 'info' command")
	}}}
}

// TestInspectAsksEachSectionAlone: after a refused INFO, each check reads
// the section it needs from that section's own reply, and a section the
// server hides leaves its check as a hidden INFO does.
func TestInspectAsksEachSectionAlone(t *testing.T) {
	ctx := context.Background()
	const (
		server7  = "# Server\r\nredis_version:7.2.4\r\n"
		server6  = "# Server\r\nredis_version:6.2.14\r\n"
		clusterd = "# Cluster\r\ncluster_enabled:1\r\n"
		lru      = "# Memory\r\nmaxmemory_policy:allkeys-lru\r\n"
		noevict  = "# Memory\r\nmaxmemory_policy:noeviction\r\n"
	)
	all := []string{"server", "cluster", "memory"}
	for _, tc := range []struct {
		name  string
		check EvictionCheck
		shown map[string]string
		errs  map[string]error
		want  func(t *testing.T, err error)
	}{
		{name: "memory only, noeviction", check: EvictionRefuse, shown: map[string]string{"memory": noevict},
			want: func(t *testing.T, err error) { assert.NoError(t, err) }},
		{name: "memory only, allkeys-lru", check: EvictionRefuse, shown: map[string]string{"memory": lru},
			want: func(t *testing.T, err error) {
				var e *EvictionPolicyError
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "allkeys-lru", e.Policy)
			}},
		{name: "memory only, allkeys-lru, warned", check: EvictionWarn, shown: map[string]string{"memory": lru},
			want: func(t *testing.T, err error) { assert.NoError(t, err) }},
		{name: "cluster only", check: EvictionIgnore, shown: map[string]string{"cluster": clusterd},
			want: func(t *testing.T, err error) {
				var e *ClusterModeError
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "redisstore.sectionServer", e.Client)
			}},
		{name: "server only, 6.2", check: EvictionIgnore, shown: map[string]string{"server": server6},
			want: func(t *testing.T, err error) {
				var e *ServerVersionError
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "6.2.14", e.Version)
			}},
		{name: "server only, 7.2, memory hidden", check: EvictionWarn, shown: map[string]string{"server": server7},
			want: func(t *testing.T, err error) {
				require.ErrorIs(t, err, ErrServer)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "eviction check", e.Op)
				assert.Contains(t, e.Detail, "NOPERM")
			}},
		{name: "all hidden, EvictionIgnore", check: EvictionIgnore,
			want: func(t *testing.T, err error) { assert.NoError(t, err) }},
		{name: "loading after the refusal", check: EvictionWarn, shown: map[string]string{"memory": noevict},
			errs: map[string]error{"cluster": redisError("LOADING Redis is loading the dataset in memory")},
			want: func(t *testing.T, err error) {
				require.ErrorIs(t, err, ErrUnavailable)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Contains(t, e.Detail, "LOADING")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSectionServer(tc.shown, tc.errs)
			s := &Store{client: srv, check: tc.check, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			tc.want(t, s.inspect(ctx))
			sections := all
			if tc.check == EvictionIgnore {
				sections = all[:2]
			}
			require.NotEmpty(t, srv.f.calls)
			assert.Equal(t, sections, srv.f.calls[0], "the combined INFO first")
			for i, c := range srv.f.calls[1:] {
				assert.Equal(t, []string{sections[i]}, c, "then each section alone, in turn")
			}
		})
	}
}
