// Command ginapi is a gin service whose POST routes are guarded by the
// oncehttp middleware through Idempotent: a retry with the same
// Idempotency-Key gets the first answer replayed (Idempotent-Replayed:
// true), a duplicate while the first request runs gets 409, the key on
// another order or body 422, a POST without a key 400.
//
//	go run ./examples/routers/ginapi   # listens on 127.0.0.1:8080, memory store
//	curl -i -X POST localhost:8080/orders/42/payments -H 'Authorization: Bearer alice' \
//	  -H 'Idempotency-Key: k-1' -d '{"amount":100}'
//
// The caller is identified by "Authorization: Bearer <user>" (the token is
// the user id, a stand-in for real authentication). The gin auth
// middleware puts the user in the request's context, where oncehttp's
// scope function reads it; a request without it gets 401.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

func main() {
	r, _, err := newRouter(once.New(nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: r, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

type userKey struct{}

// authenticate puts the caller's user id in the request's context, as
// oncehttp's scope function reads it: c.Set would keep it in the
// gin.Context alone, which the scope function, given the *http.Request,
// does not see.
func authenticate(c *gin.Context) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if token = strings.TrimSpace(token); ok && token != "" {
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), userKey{}, token))
	}
	c.Next()
}

// scope is the oncehttp scope of a request: the authenticated user.
func scope(r *http.Request) (string, error) {
	if u, ok := r.Context().Value(userKey{}).(string); ok {
		return u, nil
	}
	return "", errors.New("no bearer token")
}

// orders is the payment handler; gate, if not nil, is called first (tests
// hold a request in the handler with it).
type orders struct {
	runs atomic.Int64
	gate func(order string)
}

type payRequest struct {
	Amount int    `json:"amount"`
	Card   string `json:"card"`
}

func (o *orders) pay(c *gin.Context) {
	id := c.Param("id")
	if o.gate != nil {
		o.gate(id)
	}
	n := o.runs.Add(1)
	var req payRequest
	if err := c.ShouldBindJSON(&req); err != nil || req.Amount <= 0 {
		c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": "want a positive amount"})
		return
	}
	if req.Card == "declined" {
		c.AbortWithStatusJSON(http.StatusPaymentRequired, gin.H{"error": "card declined"})
		return
	}
	key, _ := oncehttp.Key(c.Request.Context())
	user, _ := c.Request.Context().Value(userKey{}).(string)
	p := fmt.Sprintf("p-%d", n)
	c.Header("Location", "/orders/"+id+"/payments/"+p)
	c.JSON(http.StatusCreated, gin.H{"order": id, "payment": p, "key": key, "user": user})
}

// newRouter is the service on k: authentication for every route, and the
// idempotency middleware on the /orders group.
func newRouter(k *once.Keeper, gate func(order string)) (*gin.Engine, *orders, error) {
	mw, err := oncehttp.New(k, oncehttp.Config{Scope: scope})
	if err != nil {
		return nil, nil, err
	}
	o := &orders{gate: gate}
	r := gin.New()
	r.Use(gin.Recovery(), authenticate)
	g := r.Group("/orders", Idempotent(mw))
	g.POST("/:id/payments", o.pay)
	return r, o, nil
}
