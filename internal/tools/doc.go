// Package tools defines the Tool interface every core tool implements, the
// registry that holds them, and the argument helpers that turn a model's
// JSON into checked values with errors the model can act on.
//
// Tool schemas are built with Object, which produces the flat shape every
// provider accepts (a description on every property, string enums, no
// unions, additionalProperties false); LintSchema checks hand-written ones.
// SchemaTokens says what a tool definition costs in a model's context.
//
// Tools are stateless and safe for concurrent use; everything a call may
// touch comes in its Env. A Registry is immutable once built, and every
// function here is safe for concurrent use.
package tools
