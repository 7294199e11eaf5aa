package telegram

import (
	"encoding/json"
)

// The Bot API's shapes, reduced to the fields Talon reads. Unknown fields
// are ignored by encoding/json, so a newer Bot API version stays readable.

type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

type user struct {
	ID                      int64  `json:"id"`
	IsBot                   bool   `json:"is_bot"`
	FirstName               string `json:"first_name"`
	LastName                string `json:"last_name"`
	Username                string `json:"username"`
	CanJoinGroups           bool   `json:"can_join_groups"`
	CanReadAllGroupMessages bool   `json:"can_read_all_group_messages"`
	HasTopicsEnabled        bool   `json:"has_topics_enabled"`
}

type chat struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"` // private, group, supergroup, channel
	Title   string `json:"title"`
	IsForum bool   `json:"is_forum"`
}

type entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"` // UTF-16 code units
	Length int    `json:"length"` // UTF-16 code units
	User   *user  `json:"user"`
}

type message struct {
	MessageID       int64     `json:"message_id"`
	MessageThreadID int64     `json:"message_thread_id"`
	IsTopicMessage  bool      `json:"is_topic_message"`
	From            *user     `json:"from"`
	Chat            chat      `json:"chat"`
	Date            int64     `json:"date"`
	Text            string    `json:"text"`
	Entities        []entity  `json:"entities"`
	Caption         string    `json:"caption"`
	CaptionEntities []entity  `json:"caption_entities"`
	ReplyToMessage  *message  `json:"reply_to_message"`
	MigrateToChatID int64     `json:"migrate_to_chat_id"`
	ForumTopic      *struct{} `json:"forum_topic_created"`

	Photo     []file `json:"photo"` // the sizes of one photo, smallest first
	Document  *file  `json:"document"`
	Audio     *file  `json:"audio"`
	Voice     *file  `json:"voice"`
	Video     *file  `json:"video"`
	VideoNote *file  `json:"video_note"`
	Sticker   *file  `json:"sticker"`
}

// file is any of PhotoSize, Document, Audio, Voice, Video, VideoNote and
// Sticker: the fields they share, and those of the ones that have them.
type file struct {
	FileID     string `json:"file_id"`
	FileSize   int64  `json:"file_size"`
	FileName   string `json:"file_name"`
	MIMEType   string `json:"mime_type"`
	Width      int64  `json:"width"`
	Height     int64  `json:"height"`
	IsAnimated bool   `json:"is_animated"` // a sticker in TGS
	IsVideo    bool   `json:"is_video"`    // a sticker in WebM
}

// fileInfo is getFile's answer.
type fileInfo struct {
	FileID   string `json:"file_id"`
	FileSize int64  `json:"file_size"`
	FilePath string `json:"file_path"`
}

// callbackQuery is the press of an inline button. Message is the message
// the button is on; its date is 0 when the bot can no longer see it.
type callbackQuery struct {
	ID      string   `json:"id"`
	From    *user    `json:"from"`
	Message *message `json:"message"`
	Data    string   `json:"data"`
}

type update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *message       `json:"message"`
	CallbackQuery *callbackQuery `json:"callback_query"`
}

// allowedUpdates is what Talon asks Telegram for (spec R11.4). Only
// message and callback_query are turned into an Envelope today; the others are acknowledged
// and dropped (see doc.go), asked for so that a later version handles
// them without a change of subscription.
var allowedUpdates = []string{"message", "edited_message", "channel_post", "callback_query", "message_reaction", "my_chat_member"}
