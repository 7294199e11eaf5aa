package format

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name, in                     string
		telegram, slack, discord, pl string
	}{
		{"styles", "**b** *i* _i_ ~~s~~ ||sp|| `c`",
			"<b>b</b> <i>i</i> <i>i</i> <s>s</s> <tg-spoiler>sp</tg-spoiler> <code>c</code>",
			"*b* _i_ _i_ ~s~ sp `c`",
			"**b** _i_ _i_ ~~s~~ ||sp|| `c`",
			"b i i s sp c"},
		{"nested", "***both*** **bold _and it_**",
			"<b><i>both</i></b> <b>bold <i>and it</i></b>",
			"*_both_* *bold _and it_*",
			"**_both_** **bold _and it_**", "both bold and it"},
		{"code inside bold", "**bold `code` text**",
			"<b>bold </b><code>code</code><b> text</b>", "*bold `code` text*", "**bold `code` text**", "bold code text"},
		{"entities decode, then escape", "Tom &amp; Jerry &lt;3 &#233; &bogus; &amp",
			"Tom &amp; Jerry &lt;3 é &amp;bogus; &amp;amp", "Tom &amp; Jerry &lt;3 é &amp;bogus; &amp;amp", "Tom & Jerry <3 é &bogus; &amp", "Tom & Jerry <3 é &bogus; &amp"},
		{"image as a link", "![chart](https://x.io/c.png) and ![](https://x.io/d.png) !not",
			`<a href="https://x.io/c.png">chart</a> and <a href="https://x.io/d.png">https://x.io/d.png</a> !not`, "", "", "chart (https://x.io/c.png) and https://x.io/d.png !not"},
		{"literal html is text", "<b>not bold</b> & 1 < 2 > 0",
			"&lt;b&gt;not bold&lt;/b&gt; &amp; 1 &lt; 2 &gt; 0",
			"&lt;b&gt;not bold&lt;/b&gt; &amp; 1 &lt; 2 &gt; 0",
			"<b>not bold</b> & 1 < 2 > 0",
			"<b>not bold</b> & 1 < 2 > 0"},
		{"unclosed emphasis stays literal", "**open and *half",
			"**open and *half", "**open and *half", `\*\*open and \*half`, "**open and *half"},
		{"link", "see [the docs](https://x.io/a?b=1&c=2) now",
			`see <a href="https://x.io/a?b=1&amp;c=2">the docs</a> now`,
			"see <https://x.io/a?b=1&amp;c=2|the docs> now",
			"see [the docs](<https://x.io/a?b=1&c=2>) now",
			"see the docs (https://x.io/a?b=1&c=2) now"},
		{"unsafe link shows its target", "[click](javascript:alert(1))",
			"click (javascript:alert(1))", "click (javascript:alert(1))", "click (javascript:alert(1))", "click (javascript:alert(1))"},
		{"autolink", "<https://a.b/c>",
			`<a href="https://a.b/c">https://a.b/c</a>`, "<https://a.b/c|https://a.b/c>", "[https://a.b/c](<https://a.b/c>)", "https://a.b/c"},
		{"bare url keeps underscores", "go to https://a.b/x_y_z, then",
			"go to https://a.b/x_y_z, then", "go to https://a.b/x_y_z, then", "go to https://a.b/x_y_z, then", "go to https://a.b/x_y_z, then"},
		{"mentions", "hi <@123> in <#456> and <@&789>",
			"hi &lt;@123&gt; in &lt;#456&gt; and &lt;@&amp;789&gt;",
			"hi <@123> in <#456> and <@&789>",
			"hi <@123> in <#456> and <@&789>",
			"hi <@123> in <#456> and <@&789>"},
		{"code keeps markup characters", "`a*b_c<d>`",
			"<code>a*b_c&lt;d&gt;</code>", "`a*b_c&lt;d&gt;`", "`a*b_c<d>`", "a*b_c<d>"},
		{"discord code with backticks", "``a`b``", "<code>a`b</code>", "`a`b`", "`` a`b ``", "a`b"},
		{"escapes", `\*not\* snake_case`,
			"*not* snake_case", "*not* snake_case", `\*not\* snake\_case`, "*not* snake_case"},
		{"heading and list", "## Plan\n- one\n- two\n1. first",
			"<b>Plan</b>\n• one\n• two\n1. first", "*Plan*\n• one\n• two\n1. first", "**Plan**\n• one\n• two\n1. first", "Plan\n• one\n• two\n1. first"},
		{"quote", "> said *this*", "&gt; said <i>this</i>", "> said _this_", "> said _this_", "> said this"},
		{"discord line starts", "a\n\\# not a heading\n\\- not a list",
			"a\n# not a heading\n- not a list", "a\n# not a heading\n- not a list", "a\n\\# not a heading\n\\- not a list", "a\n# not a heading\n- not a list"},
		{"fence", "```py\nprint('<x>')\n```",
			"<pre><code class=\"language-py\">print('&lt;x&gt;')</code></pre>", "```\nprint('&lt;x&gt;')\n```", "```py\nprint('<x>')\n```", "print('<x>')"},
		{"fence holding a fence", "~~~md\n```\nx\n```\n~~~",
			"<pre><code class=\"language-md\">```\nx\n```</code></pre>", "````\n```\nx\n```\n````", "````md\n```\nx\n```\n````", "```\nx\n```"},
		{"unclosed fence runs to the end", "text\n```\ncode **not bold**",
			"text\n<pre>code **not bold**</pre>", "text\n```\ncode **not bold**\n```", "text\n```\ncode **not bold**\n```", "text\ncode **not bold**"},
		{"fence under a list item", "1. Run:\n    ```sh\n    make test\n      --verbose\n    ```\n2. Done",
			"1. Run:\n<pre><code class=\"language-sh\">make test\n  --verbose</code></pre>\n2. Done", "", "1. Run:\n```sh\nmake test\n  --verbose\n```\n2. Done", ""},
		{"hostile language", "```\"><b>\nx\n```", "<pre>x</pre>", "```\nx\n```", "```\nx\n```", "x"},
		{"table as code", "| a | b |\n|---|:-:|\n| 1 | **2** |",
			"<pre>| a   | b   |\n| --- | --- |\n| 1   | 2   |</pre>", "", "", "| a   | b   |\n| --- | --- |\n| 1   | 2   |"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n———\n\nb", "a\n\n———\n\nb", "a\n\n———\n\nb", "a\n\n———\n\nb"},
		{"blank", " \n\n \t", "", "", "", ""},
		{"blank code", "```\n   \n```", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []struct {
				flavor Flavor
				want   string
			}{{Telegram, tt.telegram}, {Slack, tt.slack}, {Discord, tt.discord}, {Plain, tt.pl}} {
				if f.want == "" && !strings.HasPrefix(tt.name, "blank") {
					continue // not asserted for this flavour
				}
				o := Options{Flavor: f.flavor}
				chunks := Chunks(tt.in, o)
				checkChunks(t, tt.in, o, chunks)
				got := ""
				for _, c := range chunks {
					got += c.Text
				}
				if got != f.want {
					t.Errorf("%s:\n got %q\nwant %q", f.flavor, got, f.want)
				}
			}
		})
	}
}
