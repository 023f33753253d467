"""tuner"""
