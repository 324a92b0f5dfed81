mod crash;
mod events;
mod runs;
