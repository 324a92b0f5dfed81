mod dts;
