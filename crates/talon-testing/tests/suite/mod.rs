mod architecture;
mod forge;
mod postgres;
mod rules;
mod sshd;
mod wait;
