package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

// TestNewRefusesClusterNodeWithoutClusterClient: a client that sends
// every command to one node (a *redis.Client)
// pointed at nodes of a Redis Cluster is refused by New with a
// *ClusterModeError that names the client and says to pass a
// *redis.ClusterClient: the server's INFO cluster decides, not the
// client's type. The *redis.ClusterClient on the same nodes is accepted.
func TestNewRefusesClusterNodeWithoutClusterClient(t *testing.T) {
	clusterClient(t) // skip or fail when the Cluster is down, and wait for cluster_state:ok
	addrs := clusterAddrs()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		typ    string // its Go type, as the error names it
		check  redisstore.EvictionCheck
	}{
		{"Client", redis.NewClient(&redis.Options{Addr: addrs[0]}), "*redis.Client", redisstore.EvictionWarn},
		{"Client/EvictionIgnore", redis.NewClient(&redis.Options{Addr: addrs[0]}), "*redis.Client", redisstore.EvictionIgnore},
		{"NewUniversalClient", redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs[:1]}), "*redis.Client", redisstore.EvictionWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { _ = tc.client.Close() })
			s, err := redisstore.New(ctx, tc.client, &redisstore.Config{KeyPrefix: testPrefix, EvictionPolicyCheck: tc.check})
			var e *redisstore.ClusterModeError
			require.ErrorAs(t, err, &e, "New accepted a %T on a cluster node", tc.client)
			assert.Nil(t, s)
			assert.Contains(t, addrs, e.Addr)
			assert.Equal(t, tc.typ, e.Client)
			assert.Contains(t, err.Error(), "redis at "+e.Addr+" runs in cluster mode")
			assert.Contains(t, err.Error(), "the client is a "+tc.typ)
			assert.Contains(t, err.Error(), "pass a *redis.ClusterClient")
		})
	}
	t.Run("*redis.ClusterClient", func(t *testing.T) {
		_, err := redisstore.New(ctx, clusterClient(t), nonDefault(testPrefix))
		require.NoError(t, err)
	})
}

// TestNewSendsOneInfo: New reads the version, the cluster mode and the
// eviction policy from one INFO (server, cluster and memory sections).
func TestNewSendsOneInfo(t *testing.T) {
	for name, check := range map[string]redisstore.EvictionCheck{
		"EvictionWarn":   redisstore.EvictionWarn,
		"EvictionRefuse": redisstore.EvictionRefuse,
		"EvictionIgnore": redisstore.EvictionIgnore,
	} {
		t.Run(name, func(t *testing.T) {
			client, n := countingClient(t)
			args := &infoArgs{}
			client.AddHook(args)
			_, err := redisstore.New(context.Background(), client, &redisstore.Config{KeyPrefix: testPrefix, EvictionPolicyCheck: check})
			if check == redisstore.EvictionRefuse {
				var e *redisstore.EvictionPolicyError
				if errors.As(err, &e) {
					t.Skipf("the server runs maxmemory-policy %q", e.Policy)
				}
			}
			require.NoError(t, err)
			infos := 0
			for _, c := range n.take() {
				if c == "info" {
					infos++
				}
			}
			assert.Equal(t, 1, infos, "INFO commands New sent")
			want := []any{"info", "server", "cluster", "memory"}
			if check == redisstore.EvictionIgnore {
				want = want[:3]
			}
			assert.Equal(t, [][]any{want}, args.get())
		})
	}
}

// infoArgs is a go-redis hook that records the arguments of every INFO.
type infoArgs struct {
	counter
	args [][]any
}

func (h *infoArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "info" {
			h.mu.Lock()
			h.args = append(h.args, cmd.Args())
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *infoArgs) get() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.args
}

// TestNewAuthErrors: a server that refuses the client's credentials
// (NOAUTH without a password, WRONGPASS with a wrong one) fails New's
// version check with ErrServer and the server's message; it is not taken
// for a server that hides INFO.
func TestNewAuthErrors(t *testing.T) {
	opt := privateRedis(t, "--requirepass", "right")
	ctx := context.Background()
	for name, tc := range map[string]struct{ password, reply string }{
		"no password":    {"", "NOAUTH"},
		"wrong password": {"wrong", "WRONGPASS"},
	} {
		for check, checkName := range map[redisstore.EvictionCheck]string{redisstore.EvictionWarn: "EvictionWarn", redisstore.EvictionIgnore: "EvictionIgnore"} {
			t.Run(name+"/"+checkName, func(t *testing.T) {
				o := *opt
				o.Password = tc.password
				c := redis.NewClient(&o)
				defer c.Close()
				_, err := redisstore.New(ctx, c, &redisstore.Config{EvictionPolicyCheck: check})
				require.ErrorIs(t, err, redisstore.ErrServer)
				var e *redisstore.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "version check", e.Op)
				assert.Contains(t, e.Detail, tc.reply)
			})
		}
	}
	o := *opt
	o.Password = "right"
	c := redis.NewClient(&o)
	defer c.Close()
	_, err := redisstore.New(ctx, c, nil)
	require.NoError(t, err, "the right password")
}

// TestNewOnBusyServer: a server busy running a long script answers INFO
// with BUSY; New fails with ErrUnavailable (transient: call it again),
// and succeeds once the server answers again.
func TestNewOnBusyServer(t *testing.T) {
	// A script counts as busy after 100 ms (the default is 5 s).
	opt := privateRedis(t, "--busy-reply-threshold", "100")
	ctx := context.Background()
	c := redis.NewClient(opt)
	defer c.Close()
	// No read timeout: the script's reply is awaited however long the
	// machine takes to get there.
	bo := *opt
	bo.ReadTimeout = -1
	busy := redis.NewClient(&bo)
	defer busy.Close()
	done := make(chan error, 1)
	go func() {
		// Read-only, so SCRIPT KILL can stop it.
		done <- busy.Eval(ctx, "while true do redis.call('PING') end", nil).Err()
	}()
	for {
		err := c.Info(ctx, "server").Err()
		if err != nil && redis.HasErrorPrefix(err, "BUSY") {
			break
		}
		require.True(t, err == nil, "INFO: %v", err)
		select {
		case err := <-done:
			t.Fatalf("the script ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, check := range []redisstore.EvictionCheck{redisstore.EvictionWarn, redisstore.EvictionIgnore} {
		_, err := redisstore.New(ctx, c, &redisstore.Config{EvictionPolicyCheck: check})
		require.ErrorIs(t, err, redisstore.ErrUnavailable)
		var e *redisstore.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "version check", e.Op)
		assert.Contains(t, e.Detail, "BUSY")
	}
	require.NoError(t, c.ScriptKill(ctx).Err())
	require.Error(t, <-done, "the script was killed")
	_, err := redisstore.New(ctx, c, nil)
	require.NoError(t, err, "New again once the server answers")
}

// TestNewOnHiddenInfo: a server that does not answer INFO to the
// client's ACL user (NOPERM) is not checked: New succeeds with
// EvictionIgnore (and fails its eviction check otherwise, as documented),
// and the store works on it (a Redis 7 server, so its first Claim
// succeeds; an older server's first Claim would fail with ErrServer,
// which this server cannot show).
func TestNewOnHiddenInfo(t *testing.T) {
	opt := privateRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(opt)
	defer admin.Close()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info").Err())
	o := *opt
	o.Username, o.Password = "noinfo", "pw"
	c := redis.NewClient(&o)
	defer c.Close()
	err := c.Info(ctx, "server").Err()
	require.True(t, redis.HasErrorPrefix(err, "NOPERM"), "INFO is hidden from the user: %v", err)

	_, err = redisstore.New(ctx, c, nil)
	require.ErrorIs(t, err, redisstore.ErrServer, "the eviction check needs INFO")
	var e *redisstore.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "eviction check", e.Op)

	s, err := redisstore.New(ctx, c, &redisstore.Config{EvictionPolicyCheck: redisstore.EvictionIgnore})
	require.NoError(t, err)
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Minute})
	require.NoError(t, err)
	assert.True(t, r.Claimed)
}
