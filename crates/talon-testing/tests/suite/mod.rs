mod architecture;
mod forge;
mod postgres;
mod sshd;
mod wait;
