// Package policy decides which tools an agent's model may see and call, and
// explains every decision.
//
// It reproduces OpenClaw 2026.3.13's layered tool policy exactly
// (spec/tool-policy.md): the core catalog, groups and profiles, name
// normalisation and globs, construction gating, plugin resolution, the
// message-provider, model-provider and owner-only pre-filters, and the nine
// pipeline steps from the profile down to the sandbox and subagent policies.
// Its answer is the tool list plus a trace: for every candidate that did not
// survive, the stage and the config key that removed it, and for every
// allow list the pipeline ignored, why.
//
// What the policy allows and what Talon can run are two notions, kept
// apart. Evaluate is OpenClaw's policy over whatever candidates it is
// given (the conformance vectors' tools_out). Explain takes, besides
// OpenClaw's catalog, an Inventory of the tools Talon has built (the
// caller's registry; the package never imports the tools): a catalog tool
// Talon lacks is "not built in Talon", never available and never the
// subject of a fix, and the available rows are the policy evaluated over
// the built tools, which is what a run offers the model.
//
// The package is pure: no I/O, no clock, no globals that change. An Engine
// compiles one config and is safe for concurrent use; Evaluate compiles and
// evaluates in one call.
package policy
