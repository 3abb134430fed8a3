package oncehttp

import "math"

// headerBudget is the room beside the body for a stored response's
// headers, trailers and envelope.
const headerBudget = 64 << 10

// envelopeOverhead is what the core adds to the codec's bytes of a value
// (its envelope header), with room to spare.
const envelopeOverhead = 16

// outcomeCap is the one size rule of stored responses: the Keeper's
// outcome cap for the calls that store a response whose body is at most
// maxBody bytes, which is the body and headerBudget (math.MaxInt when that
// sum would overflow). The middleware stores with outcomeCap(MaxStoredBody);
// a resolution (ResolveResponse, NewReconciler) with resolutionCap.
func outcomeCap(maxBody int) int {
	if maxBody > math.MaxInt-headerBudget {
		return math.MaxInt
	}
	return maxBody + headerBudget
}

// resolutionCap is the outcome cap of a resolution: the cap of a
// middleware whose MaxStoredBody is the largest there is, so that every
// response a middleware stores, whatever its Config, can also be the
// answer that resolves one of its held keys. A resolution refused for its
// size would leave a key held until resolved held for good. The store's
// own limits still apply.
var resolutionCap = outcomeCap(math.MaxInt)
