mod architecture;
mod postgres;
mod wait;
