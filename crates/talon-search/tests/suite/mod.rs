mod quality;
