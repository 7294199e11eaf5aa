// Package bench is the harness behind `talon bench`: it starts fake
// OpenAI-compatible LLMs in-process (internal/fakellm), runs a talon
// binary it is given as `talon serve` subprocesses with fresh state dirs
// (and, to compare, the real OpenClaw gateway configured against the same
// fakes), measures cold start, memory, per-turn overhead, tool-call
// overhead and behaviour under concurrent streams, and reports figures as
// a markdown table and JSON, checked against a budget file.
//
// Measurements are a list (see measurements in run.go): each declares the
// figures it yields for a Plan, so budgets are validated before anything
// runs and later work adds rows by adding an entry. Nothing here asserts
// speed; Run returns figures and Budget.Check compares them. Run is not
// safe for concurrent use with itself (it raises the process's open-files
// limit and measures the machine); the pure parts (Percentile, Budget,
// Report) are.
package bench
