mod architecture;
mod postgres;
