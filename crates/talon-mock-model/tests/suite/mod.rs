mod messages;
mod wire;
