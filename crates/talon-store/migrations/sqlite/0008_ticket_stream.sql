-- The one stream a ticket opens (`TicketStream` as JSON). Tickets minted
-- before this column have none: they open the event log's SSE stream.
ALTER TABLE stream_tickets ADD COLUMN stream TEXT;
