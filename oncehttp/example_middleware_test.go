package oncehttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

func Example() {
	orders := 0
	placeOrder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orders++
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", orders))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, orders)
	})

	m, err := oncehttp.New(once.New(nil), oncehttp.Config{
		// The authenticated principal; a real service reads it from the
		// context its authentication middleware filled in.
		Scope: func(r *http.Request) (string, error) {
			if u := r.Header.Get("X-User"); u != "" {
				return u, nil
			}
			return "", errors.New("unauthenticated")
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", m.Handler(placeOrder))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(key, body string) {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(body))
		req.Header.Set("X-User", "buyer-1")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Idempotent-Replayed"), string(b))
	}
	const order = `{"hold_ids":[88211,88212]}`
	post("7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", order) // first: the order is placed
	post("7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", order) // retry: the same 201, replayed
	post("7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", `{"hold_ids":[1]}`)
	fmt.Println("orders placed:", orders)
	// Output:
	// 201 /orders/1  {"id":1}
	// 201 /orders/1 true {"id":1}
	// 422   {"type":"https://stagedoor.example/problems/idempotency-key-reused","title":"Idempotency key reused","status":422,"detail":"This idempotency key was already used with a different request (method, path or body); use a new key for a new request."}
	//
	// orders placed: 1
}
