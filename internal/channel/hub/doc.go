// Package hub is a tenant's channel runtime: it runs the tenant's
// Telegram, Slack and Discord accounts and carries every inbound message
// through the pipeline of spec/channels.md §2 to an answer delivered
// exactly once.
//
// An adapter (channel.Transport) hands each inbound message to the hub,
// which stores it in the tenant's database (store: the inbox) before the
// adapter acknowledges it to the platform, and deduplicates it there. Per
// conversation, one goroutine takes the stored messages in order: the
// gates (own and bot messages, DM policy with the pairing store, room and
// sender allowlists, mention gating), the route to one agent and session,
// the turn (Turns, which the gateway implements with its session
// runtime), and the answer, rendered for the platform, cut into chunks
// and committed to the outbox with the message in one transaction. Each
// chunk is marked sending before the platform is called and sent when it
// answered, so after a crash — at any point — nothing acknowledged is
// lost, a turn whose answer was not committed runs again, and a chunk is
// never sent twice: one in flight at the crash is left unconfirmed
// (R8.12) unless the platform deduplicates by the chunk's key
// (Idempotent).
//
// Accounts start, stop and restart as the tenant's config changes
// (Apply); one bot token runs in one account of one tenant in the process
// (Tokens). Pairing requests and approvals live in the database, so
// `talon pairing approve` in another process applies to the next message.
package hub
