package oncegrpc_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/internal/adaptertest"
	"github.com/stagedoor/once/adapters/oncegrpc"
)

func TestMain(m *testing.M) {
	if adaptertest.IsWorker() {
		if err := runServer(); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(m.Run())
}

// TestKilledServerOneEffectPerCall sends each of 8 orders from two clients
// at once, with one key per order, through the client interceptor to a
// server process that dies by SIGKILL in the middle of a call (after the
// claim, before the effect) and is restarted. The clients retry with the
// same key — connection refused, then the dead server's live claim
// (Aborted with RetryInfo), then the takeover after its lease — and every
// call ends with the same receipt and one effect per order.
//
// The server serves one call at a time (MaxConcurrentStreams(1) on the
// clients' one connection): a SIGKILL ends every call in flight, and a
// call caught between its effect (not transactional here) and the record
// of its outcome would run again after the lease — the documented window
// of an effect outside the store's transaction.
func TestKilledServerOneEffectPerCall(t *testing.T) {
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			const orders = 8
			spec := adaptertest.NewStoreSpec(t, kind)
			ledger := adaptertest.NewLedger(t)
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := lis.Addr().String()
			require.NoError(t, lis.Close())

			cc := dial(t, addr,
				grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond}}),
				grpcClientInterceptor(t, &oncegrpc.ClientConfig{MaxAttempts: 1000, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			var finished atomic.Int32
			replies := make([][2]string, orders)
			errs := make([][2]error, orders)
			for i := range orders {
				for c := range 2 {
					wg.Go(func() {
						defer finished.Add(1)
						id := "o" + strconv.Itoa(i)
						kctx := oncegrpc.WithKey(ctx, once.DerivedKey("charge", id))
						r, _, err := call(kctx, cc, chargeMethod, "ann", "", order(id, 5))
						replies[i][c], errs[i][c] = r.GetValue(), err
					})
				}
			}
			fleet := &adaptertest.Fleet{Workers: 1, Env: append(spec.Env(), "ONCE_WORKER_ADDR="+addr, "ONCE_WORKER_LEDGER="+ledger.Table())}
			stats := fleet.Run(t, func() bool { return finished.Load() == 2*orders }, 60*time.Second)
			wg.Wait()
			t.Logf("%s: %+v", kind, stats)
			require.Positive(t, stats.Died, "the server killed itself mid-call")
			for i := range orders {
				for c := range 2 {
					require.NoError(t, errs[i][c])
					require.Equal(t, "receipt for o"+strconv.Itoa(i), replies[i][c])
				}
			}
			effects := 0
			for key, n := range ledger.Counts(t) {
				if strings.HasPrefix(key, "kill:") {
					continue
				}
				require.Equal(t, 1, n, "effects of %s", key)
				effects++
			}
			require.Equal(t, orders, effects)
		})
	}
}

// runServer is the worker: a billing server that kills itself once per
// chosen order, after the claim and before the effect.
func runServer() error {
	ctx := context.Background()
	pool, err := adaptertest.OpenPool(ctx)
	if err != nil {
		return err
	}
	store, _, err := adaptertest.StoreSpecFromEnv().Open(ctx, pool)
	if err != nil {
		return err
	}
	ledger := adaptertest.OpenLedger(pool, os.Getenv("ONCE_WORKER_LEDGER"))
	icpt, err := oncegrpc.ServerInterceptor(once.New(store, once.WithLease(500*time.Millisecond)), oncegrpc.Config{Scope: userScope})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	impl := billingFunc(func(ctx context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
		id := in.Fields["order"].GetStringValue()
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		if h.Sum32()%2 == 0 {
			killed, err := ledger.Has(ctx, "kill:"+id)
			if err != nil {
				return nil, err
			}
			if !killed {
				if err := ledger.Record(ctx, "kill:"+id, pid); err != nil {
					return nil, err
				}
				adaptertest.KillSelf()
			}
		}
		if err := ledger.Record(ctx, id, pid); err != nil {
			return nil, err
		}
		return receipt(in)
	})
	var lis net.Listener
	for range 100 { // the dead server's port may take a moment to free
		if lis, err = net.Listen("tcp", os.Getenv("ONCE_WORKER_ADDR")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(icpt), grpc.MaxConcurrentStreams(1))
	srv.RegisterService(&billingDesc, impl)
	return srv.Serve(lis)
}
