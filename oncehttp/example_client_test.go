package oncehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

// The client side: the first attempt is lost after the server processed
// it (the gateway answers 502), the Transport retries with the same key,
// and the server replays its stored answer instead of placing a second
// order.
func ExampleTransport() {
	var orders, attempts atomic.Int64
	placeOrder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := orders.Add(1)
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", n))
		w.WriteHeader(http.StatusCreated)
	})
	m, err := oncehttp.New(once.New(nil), oncehttp.Config{
		Scope: func(r *http.Request) (string, error) { return "buyer-1", nil },
	})
	if err != nil {
		panic(err)
	}
	guarded := m.Handler(placeOrder)
	// A gateway that loses the first answer after the order was placed.
	gateway := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			guarded.ServeHTTP(httptest.NewRecorder(), r)
			http.Error(w, "upstream reset", http.StatusBadGateway)
			return
		}
		guarded.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(gateway)
	defer srv.Close()

	client := oncehttp.NewClient(&oncehttp.Transport{BaseDelay: 10 * time.Millisecond})
	// The key of the intent: born with the order, the same on every retry.
	ctx := oncehttp.WithKey(context.Background(), once.DerivedKey("checkout", "cart-42"))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"cart":42}`))
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"), "replayed:", oncehttp.Replayed(resp))
	fmt.Println("attempts:", attempts.Load(), "orders placed:", orders.Load())
	// Output:
	// 201 /orders/1 replayed: true
	// attempts: 2 orders placed: 1
}
