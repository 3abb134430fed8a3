package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

type userKey struct{}

var errUnauthenticated = errors.New("no bearer token")

// authenticate puts the caller's user id in the request's context. The
// bearer token is the user id itself: a stand-in for verifying a real
// token (a session, a JWT). A request without one passes through without
// a user; the idempotency middleware answers it 401 through scope.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token = strings.TrimSpace(token); ok && token != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, token))
		}
		next.ServeHTTP(w, r)
	})
}

// scope is the oncehttp scope of a request: the authenticated user, so that
// one user's key is, to every other user, a key nobody has seen.
func scope(r *http.Request) (string, error) {
	if u, ok := r.Context().Value(userKey{}).(string); ok {
		return u, nil
	}
	return "", errUnauthenticated
}
