package tools

import (
	"encoding/json"
	"fmt"
)

// ErrorResult is a Result reporting err's text to the model.
func ErrorResult(err error) Result {
	return Result{Text: err.Error(), IsError: true}
}

// JSONResult is a Result holding v as compact JSON. It fails only when v
// cannot be encoded, which is a bug in the tool.
func JSONResult(v any) (Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("encoding tool result: %w", err)
	}
	return Result{Text: string(b)}, nil
}
