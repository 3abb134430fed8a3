package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// The network between workers and stores is toxiproxy, run in-process as
// a library (no API server is started). Every proxy listens on loopback.
var (
	toxiServerOnce sync.Once
	toxiServer     *toxiproxy.ApiServer
	proxySeq       atomic.Int64
)

// netProxy is one TCP proxy in front of a store.
type netProxy struct {
	p *toxiproxy.Proxy
}

// newProxy starts a proxy to upstream on a free loopback port, stopped
// when t ends.
func newProxy(t testing.TB, upstream string) *netProxy {
	t.Helper()
	toxiServerOnce.Do(func() {
		toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	p := toxiproxy.NewProxy(toxiServer, fmt.Sprintf("faults-%d", proxySeq.Add(1)), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return &netProxy{p: p}
}

// addr is the proxy's listen address.
func (n *netProxy) addr() string { return n.p.Listen }

// add installs a toxic: typ is latency, timeout, reset_peer, limit_data…;
// stream is "upstream" (to the store) or "downstream" (the replies).
func (n *netProxy) add(name, typ, stream string, attrs map[string]any) error {
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	_, err = n.p.Toxics.AddToxicJson(strings.NewReader(string(b)))
	return err
}

// remove deletes a toxic; a missing one is not an error.
func (n *netProxy) remove(name string) {
	_ = n.p.Toxics.RemoveToxic(context.Background(), name)
}

// reset removes every toxic.
func (n *netProxy) reset() { n.p.Toxics.ResetToxics(context.Background()) }
