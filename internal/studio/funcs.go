package studio

import (
	"crypto/sha256"
	"fmt"
	"html/template"
	"strings"
	"time"
)

var funcs = template.FuncMap{
	"avatar": avatar,
	"join":   strings.Join,
	"roleOf": roleByIDName,
	"msTime": msTime,
	"when":   when,
}

func roleByIDName(id string) string {
	if r, ok := roleByID(id); ok {
		return r.Title
	}
	return id
}

func msTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("15:04:05 UTC")
}

// avatar draws an agent's avatar from its seed: a symmetric 5×5 pattern
// in one colour, the same for the same seed everywhere. It is built here
// from numbers only, so it is safe to put in the page as it is.
func avatar(seed string) template.HTML {
	h := sha256.Sum256([]byte("talon-avatar:" + seed))
	hue := int(h[0])<<8 | int(h[1])
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="avatar" viewBox="0 0 5 5" width="40" height="40" aria-hidden="true" focusable="false"><rect width="5" height="5" fill="hsl(%d 30%% 94%%)"/>`, hue%360)
	for y := 0; y < 5; y++ {
		for x := 0; x < 3; x++ {
			if h[2+y*3+x]&1 == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="1" height="1" fill="hsl(%d 55%% 42%%)"/>`, x, y, hue%360)
			if x < 2 {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="1" height="1" fill="hsl(%d 55%% 42%%)"/>`, 4-x, y, hue%360)
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
