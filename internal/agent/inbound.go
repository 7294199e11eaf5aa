package agent

import (
	"fmt"
	"mime"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"talon/internal/llm"
	"talon/internal/tools"
)

// InboundFile is a file that came with a turn's message: a chat
// attachment the channel downloaded. Name and MIME are the sender's,
// untrusted.
type InboundFile struct {
	Name, MIME string
	Data       []byte
}

// InboundDir is the workspace directory a turn's inbound files are
// written to, one directory per day.
const InboundDir = "inbound"

// saveInbound writes files into the workspace under InboundDir and
// returns a line for the model per file: where it is, or why it is not
// there. A file never overwrites another: a taken name gets a number.
func saveInbound(ws *os.Root, readOnly bool, now time.Time, files []InboundFile) []string {
	dir := path.Join(InboundDir, now.UTC().Format("2006-01-02"))
	var notes []string
	for _, f := range files {
		name := tools.BaseName(f.Name)
		if readOnly {
			notes = append(notes, fmt.Sprintf("[media unavailable: %s: the workspace is read-only in this sandbox]", name))
			continue
		}
		p, err := tools.CreateNew(ws, dir, name, f.Data)
		if err != nil {
			notes = append(notes, fmt.Sprintf("[media unavailable: %s: not saved: %v]", name, tools.FSError(err)))
			continue
		}
		notes = append(notes, fmt.Sprintf("[media attached: %s (%s, %s)]", p, mediaType(f.MIME), tools.ByteSize(len(f.Data))))
	}
	return notes
}

// withNotes appends notes to the text of the last user message of input
// (the turn's message), on a copy.
func withNotes(input []llm.Message, notes []string) []llm.Message {
	if len(notes) == 0 {
		return input
	}
	out := slices.Clone(input)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == llm.RoleUser {
			out[i].Content = strings.TrimSpace(out[i].Content + "\n\n" + strings.Join(notes, "\n"))
			return out
		}
	}
	return append(out, llm.Message{Role: llm.RoleUser, Content: strings.Join(notes, "\n")})
}

// mediaType is the sender's MIME type when it is one, without
// parameters; anything else is not shown to the model.
func mediaType(s string) string {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || len(mt) > 100 || strings.Count(mt, "/") != 1 {
		return "application/octet-stream"
	}
	return mt
}
