package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/tools"
)

// maxTools bounds how many tools one server may contribute, and
// maxDescription the bytes of one tool's description: each goes into
// every model request.
const (
	maxTools       = 256
	maxDescription = 2048
)

// adapt turns a server's tool list into Talon tools, skipping (with a
// warning naming server and tool) those whose name cannot be mapped, that
// collide after mapping, or whose schema is not accepted.
func (m *Manager) adapt(server string, list []*sdk.Tool) []tools.Tool {
	var out []tools.Tool
	seen := map[string]string{}
	for _, t := range list {
		if t == nil {
			continue
		}
		warn := func(reason string) {
			m.log.Warn("mcp: skipping tool", "server", server, "tool", t.Name, "reason", reason)
		}
		if len(out) == maxTools {
			warn(fmt.Sprintf("the server lists more than %d tools", maxTools))
			continue
		}
		name, err := ToolName(t.Name)
		if err != nil {
			warn(err.Error())
			continue
		}
		if prev, dup := seen[name]; dup {
			warn(fmt.Sprintf("name %q collides with tool %q listed before it", name, prev))
			continue
		}
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			warn(fmt.Sprintf("encoding input schema: %v", err))
			continue
		}
		rs, err := AcceptSchema(raw)
		if err != nil {
			warn(err.Error())
			continue
		}
		seen[name] = t.Name
		desc := strings.TrimSpace(t.Description)
		if desc == "" {
			desc = strings.TrimSpace(t.Title)
		}
		if desc == "" {
			desc = fmt.Sprintf("Tool %q of MCP server %q (the server gives no description).", t.Name, server)
		}
		if len(desc) > maxDescription {
			desc = strings.ToValidUTF8(desc[:maxDescription], "") + " […]"
		}
		out = append(out, &tool{m: m, server: server, mcpName: t.Name, name: name, desc: desc, schema: raw, rs: rs})
	}
	return out
}

// maxResultBytes bounds the text of one result given to the model.
const maxResultBytes = 512 << 10

// render turns a CallToolResult into a Result: text joined, binary content
// summarised, resources named by URI, structured content as JSON when there
// is nothing else.
func render(res *sdk.CallToolResult) tools.Result {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s%s]", c.URI, mimeSuffix(c.MIMEType)))
		case *sdk.EmbeddedResource:
			parts = append(parts, embedded(c.Resource))
		case nil:
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) > maxResultBytes {
		text = text[:maxResultBytes] + fmt.Sprintf("\n[output truncated: %d bytes, shown %d]", len(text), maxResultBytes)
	}
	if text == "" && res.IsError {
		text = "the tool reported an error without a message"
	}
	return tools.Result{Text: text, IsError: res.IsError}
}

func embedded(r *sdk.ResourceContents) string {
	switch {
	case r == nil:
		return "[resource without contents]"
	case r.Blob != nil:
		return fmt.Sprintf("[resource %s%s, %d bytes]", r.URI, mimeSuffix(r.MIMEType), len(r.Blob))
	default:
		return fmt.Sprintf("[resource %s%s]\n%s", r.URI, mimeSuffix(r.MIMEType), r.Text)
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

func mimeSuffix(mime string) string {
	if mime == "" {
		return ""
	}
	return " (" + mime + ")"
}
