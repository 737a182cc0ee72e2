"""One native codec per provider; `engine.gateway.codecs.codec_for` picks the right one."""
