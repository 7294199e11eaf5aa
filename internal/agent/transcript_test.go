package agent

import (
	"context"
	"testing"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/provider"
)

// leaving is the inspect model with a client that goes away as the answer
// arrives: it cancels the run's context after answering.
type leaving struct{ cancel context.CancelFunc }

func (l leaving) Chat(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	res, err := provider.Inspect{}.Chat(ctx, req, onDelta)
	l.cancel()
	return res, err
}

// TestAnswerRecordedWhenClientLeaves: an answer the model gave is
// committed whole even when the client leaves between the answer and the
// commit, not rolled back into an aborted turn.
func TestAnswerRecordedWhenClientLeaves(t *testing.T) {
	a := newApprovalsRig(t, `{}`, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.runner.Resolve = func(string) (provider.Provider, string, error) {
		return leaving{cancel}, config.InspectModel, nil
	}
	res, err := a.runner.Run(ctx, Request{AgentID: "main", SessionKey: key, Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: "/tools"}}})
	if err != nil {
		t.Fatalf("Run = %v, want the answer", err)
	}
	msgs := a.transcript()
	if len(msgs) != 2 || msgs[0].Content != "/tools" || msgs[1].Role != llm.RoleAssistant ||
		msgs[1].Content != res.Text || msgs[1].StopReason != "" || msgs[1].Error != "" {
		t.Fatalf("transcript %+v, want the question and the whole answer %q", msgs, res.Text)
	}
}
