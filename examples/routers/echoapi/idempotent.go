package main

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/stagedoor/once/oncehttp"
)

// Idempotent is mw as echo middleware, for a route, a group or the whole
// Echo: the handlers after it run inside mw, so that a retry with the same
// Idempotency-Key gets their first answer replayed, and a duplicate
// answered by mw (replay, 409, 422, 400, 401) does not run them.
//
// It is echo.WrapMiddleware(mw.Handler) with two changes, which that
// wrapper lacks and the tests show are needed:
//
//   - An error the handler returns (an *echo.HTTPError, a 402 decline, a
//     failure) is answered here, with c.Error, inside mw: so the answer is
//     what mw records, stores by its status and replays. Through
//     echo.WrapMiddleware the error is answered after mw finished, on a
//     response mw has already recorded as an empty 200 and stored: the
//     client and every retry get that 200, whatever the error was.
//   - The context's response is restored on the way out, a panic's too, so
//     that the middleware before it see the real response. A handler's
//     panic is answered by mw itself (500, key held), through either
//     wrapper: middleware.Recover sees only the http.ErrAbortHandler with
//     which mw aborts the connection (after a panic with it, or one once
//     the response started streaming).
//
// The error is still returned, as echo's own middleware do after c.Error,
// for outer middleware (a logger) to see; echo's error handler does
// nothing with a committed response.
func Idempotent(mw *oncehttp.Middleware) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			outer := c.Response()
			defer c.SetResponse(outer)
			mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.SetRequest(r)
				c.SetResponse(echo.NewResponse(w, c.Echo()))
				if err = next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(outer, c.Request())
			return err
		}
	}
}
