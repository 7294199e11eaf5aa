package format_test

import (
	"fmt"

	"talon/internal/channel/format"
)

func ExampleChunks() {
	reply, tags := format.TakeDirectives("[[reply_to_current]] Use <b> for **bold** in [HTML](https://html.spec.whatwg.org/).")
	for _, c := range format.Chunks(reply, format.Defaults("telegram")) {
		fmt.Println(c.Text)
		fmt.Println(c.Plain)
	}
	fmt.Println(tags.ReplyToCurrent)
	// Output:
	// Use &lt;b&gt; for <b>bold</b> in <a href="https://html.spec.whatwg.org/">HTML</a>.
	// Use <b> for bold in HTML (https://html.spec.whatwg.org/).
	// true
}
