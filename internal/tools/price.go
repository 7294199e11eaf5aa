package tools

import "talon/internal/policy"

// PriceExplanation fills in what each tool of a policy explanation costs
// in every model request, for the tools reg implements; catalog tools
// Talon does not implement stay unpriced (0). `talon tools explain` and
// the gateway's tools.explain both price with it, so they agree.
func PriceExplanation(x *policy.Explanation, reg *Registry) {
	for i := range x.Tools {
		if t, ok := reg.Get(x.Tools[i].Name); ok {
			x.Tools[i].Tokens = SchemaTokens(Spec(t))
		}
	}
}
